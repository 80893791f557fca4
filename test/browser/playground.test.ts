/**
 * The playground in headless Chromium (playwright-core, the system's /usr/bin/chromium) over a scripted engine: it
 * shows the stage graph, streams text, schedules audio buffers back to back, shows TTFT/TTFP beside the server's,
 * cancels, keeps the conversation's turns in order, sends its settings, and starts a new session. The real pipeline
 * (answers capped by max output tokens, voice turns, reset): voice.test.ts.
 */
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../e2e/serverClient.ts';
import { defaultScript } from '../e2e/serverTestEngine.ts';
import type { PageGlobals } from './pageState.ts';

const KEY = 'sk-playground';
const CHUNK_SAMPLES = 2400; // 100 ms

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;
let page: Page;

const responses = () =>
  page.evaluate(() =>
    (globalThis as unknown as PageGlobals).chorusPlayground.responses.map((r) => ({ ...r, row: null })),
  );
const turns = () =>
  page.evaluate(() =>
    (globalThis as unknown as PageGlobals).chorusPlayground.turns.map(({ role, kind, text }) => ({ role, kind, text })),
  );
const lastAnswerText = () => page.locator('#transcript li[data-role="assistant"] .text').last().textContent();
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
  browser = await launchChromium();
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
    const answer = 'w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 ';
    expect(await lastAnswerText()).toBe(answer);
    expect(await turns()).toEqual([
      { role: 'user', kind: 'text', text: 'hello browser' },
      { role: 'assistant', kind: 'answer', text: answer },
    ]);
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

    // The answer's turn says what it measured and from where, with the server's own figure for the same response,
    // which is timed inside the page's interval (from the request's arrival to the delta handed to the socket).
    const meta = await page.locator('#transcript li[data-role="assistant"] .meta').last().textContent();
    expect(meta).toMatch(
      /^completed · TTFT \d+ ms \(server [\d.]+ ms\) · TTFP \d+ ms \(server [\d.]+ ms\) · from Send/,
    );
    const measured = (await page.evaluate(
      () => (globalThis as unknown as PageGlobals).chorusPlayground.responses[0].serverLatency,
    )) as { from: string; ttft_ms: number; ttfp_ms: number };
    expect(measured.from).toBe('request');
    expect(measured.ttft_ms).toBeGreaterThan(0);
    // The server's marks precede its writes, so its intervals lie inside the page's, up to the page clock's
    // coarsening (Chromium rounds performance.now() to 100 us, with jitter, outside cross-origin isolation).
    const pageClockErrorMs = 0.2;
    expect(measured.ttft_ms).toBeLessThanOrEqual(r.ttftMs! + pageClockErrorMs);
    expect(measured.ttfp_ms).toBeLessThanOrEqual(r.ttfpMs! + pageClockErrorMs);
    expect(row[8]).toBe(`${measured.ttft_ms.toFixed(1)} / ${measured.ttfp_ms.toFixed(1)}`);

    // Speaking while its audio plays, then quiet once the last buffer has played out.
    await page.waitForFunction(() => !(globalThis as unknown as PageGlobals).chorusPlayground.speaking);
    expect(await page.getAttribute('#speaking', 'data-state')).toBe('quiet');
    const said = await page.$$eval('#events li[data-type="assistant"]', (lis) => lis.map((li) => li.textContent));
    expect(said.map((t) => t!.replace(/^[\d.]+ s\s+assistant\s+/, ''))).toEqual(['speaking', 'done speaking']);
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
      () => (globalThis as unknown as PageGlobals).chorusPlayground.turns.at(-1)?.text.startsWith('w0') === true,
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

  it('keeps the conversation: the turns in order with their answers, the history sent to the engine', async () => {
    server.engine.script = defaultScript({ tokens: 3, chunkSamples: CHUNK_SAMPLES, tokensPerChunk: 1 });
    await page.fill('#prompt', 'and one more');
    await page.click('#send');
    await statusIs('completed');
    const all = await turns();
    expect(all.map((t) => `${t.role}:${t.kind}`)).toEqual([
      'user:text',
      'assistant:answer',
      'user:text',
      'assistant:answer',
      'user:text',
      'assistant:answer',
    ]);
    expect(all.filter((t) => t.role === 'user').map((t) => t.text)).toEqual([
      'hello browser',
      'a very long answer please',
      'and one more',
    ]);
    expect(all.at(-1)!.text).toBe('w0 w1 w2 ');
    const statuses = await page.$$eval('#transcript li[data-role="assistant"]', (lis) =>
      lis.map((li) => li.getAttribute('data-status')),
    );
    expect(statuses).toEqual(['completed', 'cancelled', 'completed']);
    // One session throughout: the engine read the earlier turns with the new one.
    const contents = server.engine.lastHandle.request.messages.map((m) => m.content);
    expect(contents[0]).toBe('hello browser');
    expect(contents.at(-1)).toBe('and one more');
    // The prompt box is empty for the next turn, the context line says how much was used.
    expect(await page.inputValue('#prompt')).toBe('');
    expect(await page.textContent('#contextText')).toMatch(/^\d+ positions; 0 of \d+ prompt tokens cached/);
  });

  it('removes a turn the server forgot (conversation.item.deleted, as truncation sends it) from the view', async () => {
    const before = await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.turns);
    const [user, answer] = before;
    expect([user.role, answer.role]).toEqual(['user', 'assistant']);
    // The server announces a truncation's drops as it announces a delete the client asked for: the same event.
    for (const id of [user.itemId!, answer.itemId!])
      await page.evaluate((itemId) => {
        const ws = (globalThis as unknown as PageGlobals).chorusPlayground.ws!;
        ws.send(JSON.stringify({ type: 'conversation.item.delete', item_id: itemId }));
      }, id);
    await page.waitForFunction(
      (n) => (globalThis as unknown as PageGlobals).chorusPlayground.turns.length === n,
      before.length - 2,
    );
    const after = await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.turns);
    expect(after.map((t) => t.itemId)).toEqual(before.slice(2).map((t) => t.itemId));
    const shown = await page.$$eval('#transcript li', (lis) => lis.map((li) => li.getAttribute('data-item-id')));
    expect(shown).toEqual(after.map((t) => t.itemId));
  });

  it('sends the settings panel as session.update, and the engine runs the next answer with it', async () => {
    const updated = () =>
      page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.eventCounts['session.updated'] ?? 0);
    const before = await updated();
    await page.fill('#instructions', 'Answer in one word.');
    await page.dispatchEvent('#instructions', 'change');
    await page.fill('#temperature', '0.3');
    await page.dispatchEvent('#temperature', 'change');
    await page.fill('#maxTokens', '7');
    await page.dispatchEvent('#maxTokens', 'change');
    await page.waitForFunction(
      (n) => ((globalThis as unknown as PageGlobals).chorusPlayground.eventCounts['session.updated'] ?? 0) >= n + 3,
      before,
    );
    const echoed = await page.evaluate(
      () =>
        (globalThis as unknown as PageGlobals).chorusPlayground.events
          .filter((e) => e.type === 'session.updated')
          .at(-1)!.session,
    );
    expect(echoed).toMatchObject({
      instructions: 'Answer in one word.',
      temperature: 0.3,
      max_output_tokens: 7,
      truncation: 'auto',
      turn_detection: null, // no mic: the page commits nothing, the server detects nothing
    });
    await page.fill('#prompt', 'with the new settings');
    await page.click('#send');
    await statusIs('completed');
    const request = server.engine.lastHandle.request;
    expect(request.messages[0]).toEqual({ role: 'system', content: 'Answer in one word.' });
    expect(request.sampling).toMatchObject({ temperature: 0.3, maxTokens: 7 });
  });

  it('starts a new session: the transcript cleared, a new session id, no history sent', async () => {
    const oldId = await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.session!.id);
    await page.click('#newSession');
    await page.waitForFunction((id) => {
      const s = (globalThis as unknown as PageGlobals).chorusPlayground.session;
      return s !== null && s.id !== id;
    }, oldId);
    expect(await turns()).toEqual([]);
    expect(await page.locator('#transcript li').count()).toBe(0);
    expect(await page.locator('#responses tr').count()).toBe(0);
    expect(await page.textContent('#contextText')).toBe('–');
    expect(await page.textContent('#sessionId')).toContain(
      await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.session!.id),
    );
    await page.fill('#prompt', 'a fresh start');
    await page.click('#send');
    await statusIs('completed');
    // The new session got the panel's settings when it opened, and none of the old conversation.
    expect(server.engine.lastHandle.request.messages).toEqual([
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'a fresh start' },
    ]);
    expect((await turns()).map((t) => t.text)).toEqual(['a fresh start', 'w0 w1 w2 ']);
  });
});
