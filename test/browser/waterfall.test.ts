/**
 * The playground's waterfall over the real pipeline (configs/tiny-omni-text-in.yaml: Thinker, Talker and Code2Wav in
 * their own processes), with the trace buffer on as `chorus serve --trace-buffer N` turns it on: a loopback sink main
 * and every stage process export their spans to. A spoken answer asked for in the page, its waterfall opened: one lane
 * per process, its steps in pipeline order, first text and first audio marked. The same server then checks the trace
 * routes' edges (the key, an unknown trace, a body that is no OTLP export, one over the limit).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TraceBuffer } from '../../src/tracing/TraceBuffer.ts';
import { startTraceSink, type TraceSink } from '../../src/tracing/traceSink.ts';
import { startTracing, TRACE_SINK_TOKEN_ENV, TRACE_SINK_URL_ENV, type Tracing } from '../../src/tracing/tracing.ts';
import { ownSegments } from '../helpers/engine.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';
import type { PageGlobals } from './pageState.ts';

const KEY = 'sk-waterfall';
const MAX_BODY_BYTES = 64 * 1024;
/** A few tokens: enough for every stage to run steps and for audio to come out, over in a second or two. */
const MAX_TOKENS = 8;
/** Screenshots for a person to look at (not committed): CHORUS_SCREENSHOT_DIR=/some/dir. */
const SCREENSHOT_DIR = process.env.CHORUS_SCREENSHOT_DIR;

let buffer: TraceBuffer;
let sink: TraceSink;
let tracing: Tracing | null;
let served: ServedPipeline | undefined;
let base: string;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
const savedEnv = new Map<string, string | undefined>();

beforeAll(async () => {
  buffer = new TraceBuffer({ maxTraces: 8, maxBytes: 4 * 1024 * 1024 });
  sink = await startTraceSink(buffer);
  // Before anything starts: the stage processes inherit the environment that points their tracing at the sink.
  for (const [k, v] of Object.entries(sink.env)) {
    savedEnv.set(k, process.env[k]);
    process.env[k] = v;
  }
  tracing = startTracing('main');
  served = await servePipeline('tiny-omni-text-in.yaml', {
    apiKey: KEY,
    tracing,
    traceBuffer: buffer,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  ({ base } = served);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(base);
  await page.fill('#apiKey', KEY);
  await page.dispatchEvent('#apiKey', 'change');
  await page.waitForSelector('#stages .stage[data-stage-id="code2wav"]');
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await tracing?.shutdown();
  await sink?.close();
  for (const [k, v] of savedEnv)
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  expect(ownSegments()).toEqual([]);
});

interface Bar {
  name: string;
  startMs: number;
  endMs: number;
}

/** The drawn chart as data: each lane's bars (in drawing order) and the markers, read from the SVG. */
function drawnChart(p: Page) {
  return p.$$eval('#waterfall svg', ([chart]) => {
    const lanes = [...chart.querySelectorAll('g.lane')].map((lane) => ({
      instance: lane.getAttribute('data-instance') ?? '',
      bars: [...lane.querySelectorAll('rect.bar')].map((bar) => ({
        name: bar.getAttribute('data-name') ?? '',
        startMs: Number(bar.getAttribute('data-start-ms')),
        endMs: Number(bar.getAttribute('data-end-ms')),
        x: Number(bar.getAttribute('x')),
      })),
    }));
    const markers = [...chart.querySelectorAll('g.marker')].map((m) => ({
      event: m.getAttribute('data-event') ?? '',
      atMs: Number(m.getAttribute('data-at-ms')),
    }));
    return { lanes, markers };
  });
}

const firstOf = (bars: readonly Bar[], name: string): Bar => {
  const bar = bars.find((b) => b.name === name);
  if (!bar) throw new Error(`no ${name} bar in ${bars.map((b) => b.name).join(', ')}`);
  return bar;
};

describe('the playground waterfall', () => {
  it('draws a spoken answer as one lane per process, steps in pipeline order, first text and audio', async () => {
    await page.fill('#maxTokens', String(MAX_TOKENS));
    await page.dispatchEvent('#maxTokens', 'change');
    await page.fill('#prompt', 'Tell me about the sea.');
    await page.click('#send');
    await page.waitForFunction(() => {
      const r = (globalThis as unknown as PageGlobals).chorusPlayground.responses.at(-1);
      return r !== undefined && r.status !== 'in_progress' && r.audioSamples > 0;
    });
    const answered = await page.evaluate(() => {
      const { id, status, reason, underruns } = (globalThis as unknown as PageGlobals).chorusPlayground.responses.at(
        -1,
      )!;
      return { id, status, reason, underruns };
    });
    expect(answered).toMatchObject({ status: 'incomplete', reason: 'max_output_tokens' }); // the cap, not a failure
    const responseId = answered.id;
    await page.click(`#responses tr[data-response-id="${responseId}"] button.showWaterfall`);
    await page.waitForFunction(() => {
      const w = (globalThis as unknown as PageGlobals).chorusPlayground.waterfall;
      return w !== null && w.status !== 'loading';
    });
    const shown = await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.waterfall!);
    expect(shown).toMatchObject({ responseId, status: 'drawn', error: null });

    const { lanes, markers } = await drawnChart(page);
    // One lane per process: main first, then the stages in the order they first worked on it (the pipeline's);
    // a last lane for this page's playback when it fell behind (a loaded machine), one mark per underrun counted.
    const playback = answered.underruns > 0 ? ['playground'] : [];
    expect(lanes.map((l) => l.instance)).toEqual(['main', 'thinker#0', 'talker#0', 'code2wav#0', ...playback]);
    expect(await page.$$eval('#waterfall svg g.lane line.marker[data-event="underrun"]', (l) => l.length)).toBe(
      answered.underruns,
    );
    const lane = (instance: string) => lanes.find((l) => l.instance === instance)!.bars;
    expect(lane('main').map((b) => b.name)).toEqual(['realtime.response']);
    for (const stage of ['thinker', 'talker', 'code2wav']) {
      const bars = lane(`${stage}#0`);
      expect(bars.filter((b) => b.name === `stage ${stage}`)).toHaveLength(1);
      expect(bars.some((b) => b.name === 'queue')).toBe(true);
      // Bars are drawn in time: x grows with the start, steps do not overlap within a process.
      const steps = bars.filter((b) => b.name.endsWith(' step'));
      expect(steps.length).toBeGreaterThan(0);
      for (let i = 1; i < steps.length; i++) expect(steps[i].startMs).toBeGreaterThanOrEqual(steps[i - 1].endMs - 0.01);
      const xs = bars.map((b) => b.x);
      expect(xs).toEqual([...xs].sort((a, b) => a - b));
    }
    const thinkerPrefill = firstOf(lane('thinker#0'), 'prefill step');
    expect(firstOf(lane('thinker#0'), 'decode step').startMs).toBeGreaterThanOrEqual(thinkerPrefill.endMs - 0.01);
    // Chunks flow down the pipeline: each stage's first step after the one upstream began, its input's hop drawn.
    const talkerFirstStep = lane('talker#0').find((b) => b.name.endsWith(' step'))!;
    const code2wavRun = firstOf(lane('code2wav#0'), 'run step');
    expect(talkerFirstStep.startMs).toBeGreaterThan(thinkerPrefill.startMs);
    expect(code2wavRun.startMs).toBeGreaterThan(talkerFirstStep.startMs);
    expect(lane('talker#0').some((b) => b.name === 'chunk hop')).toBe(true);
    expect(lane('code2wav#0').some((b) => b.name === 'chunk hop')).toBe(true);
    // First text before first audio, and the first audio after Code2Wav's first run began.
    const at = (event: string) => markers.find((m) => m.event === event)?.atMs;
    expect(at('first_text')).toBeGreaterThan(0);
    expect(at('first_audio')).toBeGreaterThan(at('first_text')!);
    expect(at('first_audio')).toBeGreaterThan(code2wavRun.startMs);

    if (SCREENSHOT_DIR) {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      await page.locator('#waterfall').screenshot({ path: join(SCREENSHOT_DIR, 'waterfall.png') });
    }
    expect(pageErrors).toEqual([]);
  });

  it("keeps the trace routes behind the key, takes a remote stage's export, refuses what is not one", async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    expect((await fetch(`${base}/v1/traces`)).status).toBe(401);
    const list = (await (await fetch(`${base}/v1/traces`, { headers: auth })).json()) as {
      data: { traceId: string; roots: { name: string }[]; instances: string[] }[];
    };
    expect(list.data[0].roots.map((r) => r.name)).toEqual(['realtime.response']);
    expect(list.data[0].instances).toEqual(expect.arrayContaining(['main', 'thinker#0', 'talker#0', 'code2wav#0']));

    expect((await fetch(`${base}/v1/traces?limit=3`, { headers: auth })).status).toBe(400); // refused, not ignored
    const unknown = await fetch(`${base}/v1/traces/${'ab'.repeat(16)}`, { headers: auth });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/not in the buffer/);

    const post = (body: string) =>
      fetch(`${base}/v1/traces`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
    const notOtlp = await post(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 7 }] }] }] }));
    expect(notOtlp.status).toBe(400);
    expect(((await notOtlp.json()) as { error: { message: string } }).error.message).toMatch(/traceId/);
    // A stage on another host sends its spans here, as docs/tracing.md says: its tracing from its own environment,
    // the server's route as the sink, the API key as the token; they land in the buffer beside the local spans.
    const remote = startTracing('talker#b1', {
      [TRACE_SINK_URL_ENV]: `${base}/v1/traces`,
      [TRACE_SINK_TOKEN_ENV]: KEY,
    })!;
    const span = remote.tracer.startSpan('stage talker', { attributes: { 'chorus.stage': 'talker' } });
    span.end();
    await remote.shutdown();
    const remoteTrace = (await (
      await fetch(`${base}/v1/traces/${span.spanContext().traceId}`, { headers: auth })
    ).json()) as { spans: { name: string; instance: string }[] };
    expect(remoteTrace.spans).toEqual([expect.objectContaining({ name: 'stage talker', instance: 'talker#b1' })]);
    const tooLarge = await post(JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(MAX_BODY_BYTES) }));
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { error: { code: string } }).error.code).toBe('CHORUS_ERR_REQUEST_TOO_LARGE');
  });
});
