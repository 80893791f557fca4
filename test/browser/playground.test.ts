/**
 * The playground in headless Chromium (playwright-core, the system's /usr/bin/chromium): it shows the stage
 * graph, streams text, schedules audio buffers back to back, shows TTFT/TTFP, and cancels.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../e2e/serverClient.ts';
import { defaultScript } from '../e2e/serverTestEngine.ts';

const KEY = 'sk-playground';
const CHUNK_SAMPLES = 2400; // 100 ms

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;
let page: Page;

interface PageResponse {
  id: string | null;
  status: string;
  text: string;
  ttftMs: number | null;
  ttfpMs: number | null;
  audioSamples: number;
  underruns: number;
  schedule: { start: number; duration: number; samples: number; first: number }[];
}

/**
 * What the functions below see in the page. They run in Chromium (serialized by playwright), and this project
 * has no DOM typings, so the page's globals are described here. Strings would be simpler but the page's CSP
 * (no eval) rightly refuses them.
 */
interface PageGlobals {
  document: { querySelector(selector: string): { textContent: string | null } | null };
  chorusPlayground: {
    responses: (PageResponse & { row: unknown })[];
    audioContext: { state: string; currentTime: number };
  };
}
const responses = () =>
  page.evaluate(() =>
    (globalThis as unknown as PageGlobals).chorusPlayground.responses.map((r) => ({ ...r, row: null })),
  );
const statusIs = (status: string) =>
  page.waitForFunction(
    (s) => (globalThis as unknown as PageGlobals).document.querySelector('#status')?.textContent === s,
    status,
  );

beforeAll(async () => {
  server = await startTestServer(
    { apiKey: KEY },
    { script: defaultScript({ tokens: 12, chunkSamples: CHUNK_SAMPLES, tokensPerChunk: 2 }) },
  );
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(server.base);
  await page.fill('#apiKey', KEY);
  await page.dispatchEvent('#apiKey', 'change');
  expect(pageErrors).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await server?.app.close();
});

describe('playground', () => {
  it('shows the stage graph with per-stage status', async () => {
    await page.waitForSelector('#stages .stage[data-stage-id="code2wav"]');
    const stages = await page.$$eval('#stages .stage', (els) =>
      els.map((el) => [el.getAttribute('data-stage-id'), el.getAttribute('data-status')]),
    );
    expect(stages).toEqual([
      ['thinker', 'ready'],
      ['talker', 'ready'],
      ['code2wav', 'ready'],
    ]);
  });

  it('streams text, plays audio back to back, and shows TTFT and TTFP', async () => {
    await page.fill('#prompt', 'hello browser');
    await page.click('#send');
    await statusIs('completed');
    expect(await page.textContent('#output')).toBe('w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 ');
    expect(server.engine.lastHandle.request.messages).toEqual([{ role: 'user', content: 'hello browser' }]);

    const [r] = await responses();
    expect(r.status).toBe('completed');
    expect(r.ttftMs).toBeGreaterThan(0);
    expect(r.ttfpMs).toBeGreaterThan(0);
    expect(r.audioSamples).toBe(6 * CHUNK_SAMPLES);
    expect(r.schedule).toHaveLength(6);
    // Back to back: each buffer starts exactly where the previous one ends (the stream arrives faster than
    // real time here, so there is no underrun to excuse a gap).
    expect(r.underruns).toBe(0);
    for (let i = 1; i < r.schedule.length; i++) {
      expect(r.schedule[i].start).toBeCloseTo(r.schedule[i - 1].start + r.schedule[i - 1].duration, 9);
    }
    for (const s of r.schedule) expect(s.duration).toBeCloseTo(CHUNK_SAMPLES / 24000, 9);
    // pcm16 decoded in the page: chunk k starts with sample value k * CHUNK_SAMPLES (see serverTestEngine).
    expect(r.schedule.map((s) => Math.round(s.first * 32768))).toEqual(
      [0, 1, 2, 3, 4, 5].map((k) => k * CHUNK_SAMPLES),
    );

    // The context is really playing (not suspended by an autoplay policy): its clock advances.
    const clock = () =>
      page.evaluate(() => {
        const ctx = (globalThis as unknown as PageGlobals).chorusPlayground.audioContext;
        return { state: ctx.state, time: ctx.currentTime };
      });
    const t0 = await clock();
    expect(t0.state).toBe('running');
    await page.waitForFunction(
      (t) => (globalThis as unknown as PageGlobals).chorusPlayground.audioContext.currentTime > t,
      t0.time,
    );

    const row = await page.$$eval(`#responses tr[data-response-id="${r.id}"] td`, (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(row[1]).toBe('completed');
    expect(Number(row[2])).toBeCloseTo(r.ttftMs!, 0);
    expect(Number(row[3])).toBeCloseTo(r.ttfpMs!, 0);
    expect(row[4]).toBe('0.60');
  });

  it('cancels a response from the Cancel button', async () => {
    server.engine.script = defaultScript({
      tokens: 100_000,
      stepMs: 2,
      chunkSamples: CHUNK_SAMPLES,
      tokensPerChunk: 2,
    });
    await page.fill('#prompt', 'a very long answer please');
    await page.click('#send');
    await page.waitForFunction(
      () => ((globalThis as unknown as PageGlobals).document.querySelector('#output')?.textContent ?? '').length > 0,
    );
    await page.click('#cancel');
    await statusIs('cancelled');
    const handle = server.engine.lastHandle;
    expect(await handle.finished).toBe('cancelled');
    expect(handle.cancelCalls).toBe(1);
    const last = (await responses()).at(-1)!;
    expect(last.status).toBe('cancelled');
    expect(await page.isDisabled('#cancel')).toBe(true);
    expect(await page.isEnabled('#send')).toBe(true);
  });
});
