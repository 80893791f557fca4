/**
 * The playground as a user talks to it: headless Chromium with a fake microphone playing espeak-ng speech (quiet
 * room, a question, quiet, an interruption, quiet), a real pipeline with an audio and an image encoder
 * (configs/tiny-omni.yaml) behind /v1/realtime, server VAD turned on by the mic button. Also: the stage graph as a
 * layered DAG, an image attached to a message, the controls a pipeline without encoders cannot use, and the
 * conversation (typed and spoken turns in order with their answers, the max output tokens setting applied, the
 * context fill, a new session).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resample } from '../../src/media/resample.ts';
import { FFMPEG_PATH } from '../../src/media/video/decodeVideo.ts';
import { floatToPcm16, wavFromPcm16 } from '../../src/server/pcm.ts';
import { startTestServer } from '../e2e/serverClient.ts';
import type { PageGlobals } from './pageState.ts';
import { pngBytes } from '../helpers/media.ts';
import { configWith } from '../helpers/engine.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';
import { concatPcm, msOf, quiet, speak, SPEECH_RATE_HZ } from '../helpers/speech.ts';

const FAKE_MIC_RATE_HZ = 48_000; // Chromium's capture rate; the file is resampled here, not by the browser
/**
 * The answer must still be generating when the user cuts in (PAUSE_MS after the question) for the server to cancel it.
 * Unpaced, 1500 tokens took ~3 s alone and otherwise as long as the page took to read their 240 s of audio, which
 * sometimes ended first (the test then waited for a cancel that could not come). So the answer is paced to its
 * speech (SPEECH_PACED: speech lead for a single answer), which keeps it generating for minutes: it is still running
 * at the interruption on any machine. Its first audio must be playing by then too (TTFP is ~0.2 s warm, ~1.1 s cold).
 */
const MAX_TOKENS = 1500;
/** Speech lead (docs/scheduling.md) for every spoken answer, however few: each made at most 10 s before its speech. */
const SPEECH_PACED = { 'speech_lead_min_answers: 12': 'speech_lead_min_answers: 1' };
/** The second turn's answer, capped low from the page once the first is cancelled, so it ends in a few seconds. */
const SECOND_MAX_TOKENS = 60;
/** Typed turns' answers: a few tokens, so the conversation test takes a second or two. */
const TYPED_MAX_TOKENS = 6;
// Between the question and the interruption: the answer must be playing when the interruption starts, and under the
// whole suite's load on a slow machine its first audio came 2 s after speech_stopped (2.5 s was too short there).
const PAUSE_MS = 5000;

let dir: string;
let served: ServedPipeline | undefined;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

// Commas, not full stops: espeak-ng pauses ~0.3 s at a comma against ~0.45 s at a full stop, which is too near
// silence_duration_ms (500 ms, counted from where the speech ended) for a machine whose audio capture stutters
// under load; each utterance must stay one turn.
const question = speak('Hello there, can you tell me a story about the sea?');
const interruption = speak('Stop, tell me about the mountains instead.');
const leadIn = quiet(1000, 1);
/** What the fake microphone plays, once (%noloop, then silence), from the getUserMedia call on. */
const micAudio = concatPcm(leadIn, question, quiet(PAUSE_MS, 2), interruption, quiet(3000, 3));

/** The playground's resampler (pcm16.js): main.js puts it on globalThis, so functions run in the page can name it. */
declare const Resampler: new (
  inputRateHz: number,
  chunkSamples: number,
  onChunk: (pcm: Int16Array, rms: number) => void,
) => { push(input: Float32Array): void };

const snapshot = () =>
  page.evaluate(() => {
    const s = (globalThis as unknown as PageGlobals).chorusPlayground;
    return {
      responses: s.responses.map((r) => ({ ...r, row: null, turn: null })),
      events: s.events,
      truncations: s.truncations,
      mic: s.mic,
      turns: s.turns,
      context: s.context,
    };
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-voice-browser-'));
  const wav = join(dir, 'mic.wav');
  const floats = Float32Array.from(micAudio, (x) => x / 32768);
  writeFileSync(wav, wavFromPcm16(floatToPcm16(resample(floats, SPEECH_RATE_HZ, FAKE_MIC_RATE_HZ)), FAKE_MIC_RATE_HZ));
  // The fake camera: ffmpeg's moving test pattern, its picture negated every other second (frames a second apart
  // differ well past the near-duplicate threshold), looped by Chromium.
  const camera = join(dir, 'camera.y4m');
  const pattern = "testsrc2=size=320x240:rate=10:duration=4,negate=enable='eq(mod(floor(t),2),1)'";
  execFileSync(FFMPEG_PATH, ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', pattern, camera]);

  served = await servePipeline(configWith('tiny-omni.yaml', SPEECH_PACED));

  browser = await launchChromium([
    '--use-fake-ui-for-media-stream', // grants the microphone without a prompt
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-audio-capture=${wav}%noloop`, // played once from getUserMedia on, then silence
    `--use-file-for-fake-video-capture=${join(dir, 'camera.y4m')}`,
  ]);
  page = await browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(served.base);
  await page.waitForSelector('#stages .stage[data-stage-id="code2wav"]');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('playground with a real omni pipeline', () => {
  it('draws the stage graph as a layered DAG: both encoders feed the Thinker side by side', async () => {
    const nodes = await page.$$eval('#stages .stage', (els) =>
      els.map((el) => ({
        id: el.getAttribute('data-stage-id'),
        layer: Number(el.getAttribute('data-layer')),
        modality: el.getAttribute('data-modality'),
        status: el.getAttribute('data-status'),
      })),
    );
    expect(nodes).toEqual([
      { id: 'audio-encoder', layer: 0, modality: 'audio', status: 'ready' },
      { id: 'image-encoder', layer: 0, modality: 'image', status: 'ready' },
      { id: 'thinker', layer: 1, modality: null, status: 'ready' },
      { id: 'talker', layer: 2, modality: null, status: 'ready' },
      { id: 'code2wav', layer: 3, modality: null, status: 'ready' },
    ]);
    const edges = await page.$$eval('#stages .edge', (els) =>
      els.map((el) => `${el.getAttribute('data-from')} > ${el.getAttribute('data-to')}`),
    );
    expect(edges.sort()).toEqual([
      'audio-encoder > thinker',
      'image-encoder > thinker',
      'talker > code2wav',
      'thinker > talker',
    ]);
    // Drawn as laid out: the encoders stacked in one column, left of the Thinker, which is left of the Talker.
    const box = async (id: string) => (await page.locator(`#stages .stage[data-stage-id="${id}"]`).boundingBox())!;
    const [audio, image, thinker, talker] = await Promise.all(
      ['audio-encoder', 'image-encoder', 'thinker', 'talker'].map(box),
    );
    expect(audio.x).toBeCloseTo(image.x, 0);
    expect(image.y).toBeGreaterThanOrEqual(audio.y + audio.height);
    expect(thinker.x).toBeGreaterThan(audio.x + audio.width);
    expect(talker.x).toBeGreaterThan(thinker.x + thinker.width);
    expect(await page.isEnabled('#mic')).toBe(true);
    expect(await page.isEnabled('#image')).toBe(true);
  });

  it('resamples microphone audio to 24 kHz pcm16 in 20 ms chunks, continuous across blocks', async () => {
    // A 1 kHz tone at half scale, fed in 128-sample render quanta as the worklet gets it, at the two common rates.
    const run = (rateHz: number) =>
      page.evaluate((inputRateHz) => {
        const out: number[] = [];
        const rms: number[] = [];
        const resampler = new Resampler(inputRateHz, 480, (pcm, r) => {
          out.push(...pcm);
          rms.push(r);
        });
        const block = new Float32Array(128);
        for (let n = 0; n < inputRateHz; n += block.length) {
          for (let i = 0; i < block.length; i++)
            block[i] = 0.5 * Math.sin((2 * Math.PI * 1000 * (n + i)) / inputRateHz);
          resampler.push(block);
        }
        return { out, rms };
      }, rateHz);
    for (const rateHz of [48_000, 44_100]) {
      const { out, rms } = await run(rateHz);
      const ratio = rateHz / 24_000;
      const fed = Math.ceil(rateHz / 128) * 128; // input samples
      expect(out.length).toBe(480 * Math.floor(fed / ratio / 480)); // whole 20 ms chunks only, none lost
      // Each output sample is the input's mean over its own 1/24000 s: the tone at the interval's centre, scaled by
      // the averaging's response at 1 kHz. At 48 kHz that is exactly the mean of two samples (gain cos(pi f / 48k));
      // at 44.1 kHz the fractional overlaps make it a little less exact.
      const gain = Math.cos((Math.PI * 1000) / 48_000);
      let worst = 0;
      out.forEach((v, k) => {
        const centre = ((k + 0.5) * ratio - 0.5) / rateHz; // in seconds; input sample i is at i / rate
        worst = Math.max(worst, Math.abs(v - 0.5 * gain * 32767 * Math.sin(2 * Math.PI * 1000 * centre)));
      });
      expect(worst).toBeLessThan(rateHz === 48_000 ? 1.5 : 100); // pcm16 steps: rounding only, or under 0.3%
      for (const r of rms) expect(r).toBeCloseTo((0.5 * gain) / Math.SQRT2, 2);
    }
  });

  it('keeps the mic and image attach off, saying why, for a pipeline without encoders', async () => {
    const textIn = await startTestServer(); // a scripted Thinker -> Talker -> Code2Wav, no encoders
    const other = await browser.newPage();
    try {
      await other.goto(textIn.base);
      await other.waitForSelector('#stages .stage[data-stage-id="code2wav"]');
      expect(await other.isDisabled('#mic')).toBe(true);
      expect(await other.getAttribute('#micWrap', 'title')).toContain('no audio encoder');
      expect(await other.textContent('#micNote')).toContain('no audio encoder');
      expect(await other.isDisabled('#image')).toBe(true);
      expect(await other.getAttribute('#image', 'title')).toContain('no image encoder');
      const layers = await other.$$eval('#stages .stage', (els) => els.map((el) => el.getAttribute('data-layer')));
      expect(layers).toEqual(['0', '1', '2']);
    } finally {
      await other.close();
      await textIn.app.close();
    }
  });

  // Before the voice turns, so the pipeline is warm when the first spoken answer is timed against the interruption.
  it('attaches an image to a message (the pipeline has an image encoder)', async () => {
    await page.fill('#maxTokens', '8');
    await page.fill('#prompt', 'What is in this picture?');
    const png = Buffer.from(pngBytes(64, 48));
    await page.setInputFiles('#image', { name: 'pattern.png', mimeType: 'image/png', buffer: png });
    await page.waitForSelector('#imagePreview:not([hidden])');
    await page.click('#send');
    await page.waitForFunction(() => {
      const r = (globalThis as unknown as PageGlobals).chorusPlayground.responses[0];
      return r !== undefined && r.status !== 'in_progress';
    });
    const { responses, events } = await snapshot();
    expect(responses).toHaveLength(1);
    const [r] = responses;
    expect(r.source).toBe('text');
    expect(['completed', 'incomplete']).toContain(r.status);
    expect(r.usage!.input_token_details.image_tokens).toBeGreaterThan(0);
    expect(r.usage!.output_token_details.text_tokens).toBeLessThanOrEqual(8); // the max tokens control
    expect(r.schedule.length).toBeGreaterThan(0);
    const userItem = events.find((e) => e.type === 'conversation.item.added' && e.item?.role === 'user');
    expect(userItem?.item?.content).toEqual(['input_text', 'input_image']);
    expect(await page.inputValue('#image')).toBe(''); // attached once
    const { turns } = await snapshot();
    expect(turns.map((t) => [t.role, t.kind, t.text])).toEqual([
      ['user', 'text', 'What is in this picture? [an image]'],
      ['assistant', 'answer', turns[1].text],
    ]);
    expect(pageErrors).toEqual([]);
    // The answer plays to its end: speech from the mic later would rightly cut it off (and truncate it).
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).chorusPlayground.sources.size === 0);
  }, 30_000);

  it('keeps typed turns in order with their answers, each stopped at the max output tokens it sent', async () => {
    const updatedMax = () =>
      page.evaluate(() =>
        (globalThis as unknown as PageGlobals).chorusPlayground.events
          .filter((e) => e.type === 'session.updated')
          .map((e) => (e as { session?: { max_output_tokens?: unknown } }).session?.max_output_tokens),
      );
    await page.fill('#maxTokens', String(TYPED_MAX_TOKENS));
    await page.dispatchEvent('#maxTokens', 'change');
    await page.waitForFunction(
      (n) =>
        (globalThis as unknown as PageGlobals).chorusPlayground.events.some(
          (e) =>
            e.type === 'session.updated' &&
            (e as { session?: { max_output_tokens?: unknown } }).session?.max_output_tokens === n,
        ),
      TYPED_MAX_TOKENS,
    );
    expect((await updatedMax()).at(-1)).toBe(TYPED_MAX_TOKENS);
    const stopped = `stopped at ${TYPED_MAX_TOKENS} tokens (max output tokens)`;
    for (const prompt of ['Hello, who are you?', 'Tell me more.']) {
      const done = (await snapshot()).responses.length + 1;
      await page.fill('#prompt', prompt);
      await page.click('#send');
      await page.waitForFunction((n) => {
        const rs = (globalThis as unknown as PageGlobals).chorusPlayground.responses;
        return rs.length === n && rs[n - 1].status !== 'in_progress';
      }, done);
      // Random weights never end an answer: each one runs to the cap, and the page says so in words.
      expect(await page.textContent('#status')).toBe(stopped);
    }
    const { turns, responses, context } = await snapshot();
    expect(turns.map((t) => `${t.role}:${t.kind}`)).toEqual([
      'user:text',
      'assistant:answer',
      'user:text',
      'assistant:answer',
      'user:text',
      'assistant:answer',
    ]);
    expect(turns[2].text).toBe('Hello, who are you?');
    expect(turns[4].text).toBe('Tell me more.');
    for (const [i, r] of responses.slice(1).entries()) {
      expect(r).toMatchObject({ status: 'incomplete', reason: 'max_output_tokens' });
      expect(r.usage!.output_token_details.text_tokens).toBe(TYPED_MAX_TOKENS);
      const answer = turns[3 + 2 * i];
      expect(answer).toMatchObject({ role: 'assistant', status: stopped });
      expect(answer.text.length).toBeGreaterThan(0);
      expect(r.serverLatency).toMatchObject({ from: 'request' });
      expect(r.serverLatency!.ttfp_ms!).toBeLessThanOrEqual(r.ttfpMs!); // timed inside the page's interval
    }
    const metas = await page.$$eval('#transcript li[data-role="assistant"] .meta', (els) =>
      els.map((el) => el.textContent),
    );
    expect(metas[2]).toMatch(new RegExp(`^${stopped.replace(/[()]/g, '\\$&')} · TTFT \\d+ ms \\(server `));
    expect(metas[2]).toContain('from Send');
    // The context fill: the last prompt and its answer of the Thinker's 4096 positions; the second typed turn read
    // the first one's prefix from the cache.
    const last = responses.at(-1)!.usage!;
    expect(context).toEqual({
      usedPositions: last.input_tokens + TYPED_MAX_TOKENS,
      maxPositions: 4096,
      inputTokens: last.input_tokens,
      cachedTokens: last.input_token_details.cached_tokens,
    });
    expect(context!.cachedTokens).toBeGreaterThan(0); // the session began with an image: its block 0 waits for it
    expect(await page.textContent('#contextText')).toMatch(
      new RegExp(`^${context!.usedPositions} of 4096 Thinker positions \\(\\d+%\\); ${context!.cachedTokens} of `),
    );
    // Heard to the end before the mic starts (speech over it would cut it off).
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).chorusPlayground.sources.size === 0);
    expect(await page.getAttribute('#speaking', 'data-state')).toBe('quiet');
    expect(pageErrors).toEqual([]);
  }, 30_000);

  it('talks: speech turns from the mic, a spoken answer, and barge-in that stops and truncates it', async () => {
    await page.fill('#maxTokens', String(MAX_TOKENS));
    const from = (await snapshot()).events.length;
    await page.click('#mic');
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).chorusPlayground.mic.on);

    // 1. The question: speech_started, then speech_stopped once the pause after it is long enough.
    await page.waitForFunction(() =>
      (globalThis as unknown as PageGlobals).chorusPlayground.events.some(
        (e) => e.type === 'input_audio_buffer.speech_stopped',
      ),
    );
    // 2. The automatic answer plays: its audio is scheduled in the page's AudioContext.
    await page.waitForFunction(() =>
      (globalThis as unknown as PageGlobals).chorusPlayground.responses.some(
        (r) => r.source === 'voice' && r.schedule.length > 0,
      ),
    );
    // 3. The interruption: the answer is cancelled for the turn (server), stopped and truncated (page).
    await page.waitForFunction(() => {
      const s = (globalThis as unknown as PageGlobals).chorusPlayground;
      return s.responses.some((r) => r.status === 'cancelled') && s.truncations.some((t) => t.answered);
    });
    // 4. The second turn is answered, to the end: the max tokens control, lowered while the user is still speaking,
    //    reaches the session at once (session.update on change) and caps the turn's automatic answer.
    const updates = () =>
      page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.eventCounts['session.updated'] ?? 0);
    const updatesBefore = await updates();
    await page.fill('#maxTokens', String(SECOND_MAX_TOKENS));
    await page.dispatchEvent('#maxTokens', 'change');
    await page.waitForFunction(
      (n) => ((globalThis as unknown as PageGlobals).chorusPlayground.eventCounts['session.updated'] ?? 0) > n,
      updatesBefore,
    );
    await page.waitForFunction(
      () =>
        (globalThis as unknown as PageGlobals).chorusPlayground.responses.filter(
          (r) => r.source === 'voice' && r.status !== 'in_progress',
        ).length >= 2,
      undefined,
      { timeout: 30_000 },
    );

    const snap = await snapshot();
    const { responses, truncations, mic } = snap;
    const events = snap.events.slice(from);
    const all = (type: string) => events.filter((e) => e.type === type);
    const started = all('input_audio_buffer.speech_started');
    const stopped = all('input_audio_buffer.speech_stopped');
    expect(started).toHaveLength(2);
    expect(stopped).toHaveLength(2);
    // The VAD found the question where the fake microphone played it (less the 300 ms prefix padding; the page's
    // first chunk is a few ms after the file starts), one turn per utterance.
    expect(started[0].audio_start_ms!).toBeGreaterThan(msOf(leadIn) - 300 - 400);
    expect(started[0].audio_start_ms!).toBeLessThan(msOf(leadIn) + 400);
    expect(stopped[0].audio_end_ms!).toBeGreaterThan(msOf(leadIn) + msOf(question) - 500);
    expect(stopped[0].item_id).toBe(started[0].item_id);
    expect(started[1].audio_start_ms!).toBeGreaterThan(msOf(leadIn) + msOf(question) + PAUSE_MS - 300 - 400);
    expect(mic.chunksSent).toBeGreaterThan(msOf(micAudio) / 20 / 2); // 20 ms appends

    const voiced = responses.filter((r) => r.source === 'voice');
    expect(voiced).toHaveLength(2);
    const [first, second] = voiced;
    // The first answer was playing when the user spoke: the server cancelled it for the turn...
    expect(first).toMatchObject({ status: 'cancelled', reason: 'turn_detected', interrupted: true });
    // ...while paced to its speech (SPEECH_PACED): unpaced, 1500 tokens' 240 s of audio would all have come by now...
    expect(first.audioSamples / 24000).toBeLessThan(60);
    // ...after some of it had been heard, and no more than the page had received...
    expect(first.playedMs!).toBeGreaterThan(0);
    expect(first.playedMs!).toBeLessThanOrEqual((1000 * first.audioSamples) / 24000);
    // ...and the page truncated the assistant item at what was heard, which the server confirmed.
    expect(truncations).toEqual([
      { itemId: first.itemId, responseId: first.id, audioEndMs: first.playedMs, answered: true },
    ]);
    const truncated = all('conversation.item.truncated');
    expect(truncated).toHaveLength(1);
    expect(truncated[0]).toMatchObject({ item_id: first.itemId, audio_end_ms: first.playedMs });

    // The order a user lives through.
    const at = (type: string, nth = 0) => events.indexOf(all(type)[nth]);
    const firstDone = events.findIndex((e) => e.type === 'response.done' && e.response_id === first.id);
    expect(at('input_audio_buffer.speech_started')).toBeLessThan(at('input_audio_buffer.speech_stopped'));
    expect(at('input_audio_buffer.speech_stopped')).toBeLessThan(at('input_audio_buffer.committed'));
    expect(at('input_audio_buffer.committed')).toBeLessThan(at('response.created'));
    expect(at('response.created')).toBeLessThan(at('input_audio_buffer.speech_started', 1));
    expect(at('input_audio_buffer.speech_started', 1)).toBeLessThan(firstDone);
    expect(at('input_audio_buffer.speech_started', 1)).toBeLessThan(at('conversation.item.truncated'));
    expect(at('input_audio_buffer.speech_stopped', 1)).toBeLessThan(at('response.created', 1));
    expect(all('error')).toEqual([]);

    // The second answer played, capped by the max tokens control (sent as the session's max_output_tokens).
    expect(second.schedule.length).toBeGreaterThan(0);
    expect(['completed', 'incomplete']).toContain(second.status);
    expect(second.usage!.output_token_details.text_tokens).toBeLessThanOrEqual(SECOND_MAX_TOKENS);
    if (second.status === 'incomplete') expect(second.usage!.output_token_details.text_tokens).toBe(SECOND_MAX_TOKENS);

    // The UI shows it: the indicator, the log, the responses table.
    expect(await page.getAttribute('#voice', 'data-state')).toBe('listening');
    expect(await page.locator('#events li[data-type="input_audio_buffer.speech_started"]').count()).toBe(2);
    expect(await page.locator('#events li[data-type="input_audio_buffer.speech_stopped"]').count()).toBe(2);
    expect(await page.locator('#events li[data-type="conversation.item.truncated"]').count()).toBe(1);
    const row = await page.$$eval(`#responses tr[data-response-id="${first.id}"] td`, (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(row[1]).toBe('cancelled');
    expect(row[6]).toBe('voice');
    expect(row[7]).toContain('turn_detected');

    // The transcript: after the typed turns, each spoken turn (as long as the VAD heard it) and its answer, in order.
    const spoken = snap.turns.slice(6);
    expect(spoken.map((t) => `${t.role}:${t.kind}`)).toEqual([
      'user:speech',
      'assistant:answer',
      'user:speech',
      'assistant:answer',
    ]);
    for (const [k, turn] of [spoken[0], spoken[2]].entries()) {
      expect(turn.itemId).toBe(stopped[k].item_id);
      const heardMs = stopped[k].audio_end_ms! - started[k].audio_start_ms!;
      expect(turn.text).toBe(`[speech ${(heardMs / 1000).toFixed(1)} s]`);
    }
    expect(spoken[0].speechMs!).toBeGreaterThan(msOf(question) - 500);
    expect(spoken[1].status).toBe('interrupted: you spoke');
    expect(spoken[3].status).toMatch(/^(completed|stopped at 60 tokens \(max output tokens\))$/);
    // A voice answer's TTFP is timed from speech_stopped, by the page and by the server alike.
    expect(second.serverLatency).toMatchObject({ from: 'speech_stopped' });
    const secondMeta = await page.locator(`#transcript li[data-response-id="${second.id}"] .meta`).textContent();
    expect(secondMeta).toMatch(/TTFP \d+ ms \(server [\d.]+ ms\) · from speech_stopped/);

    await page.click('#mic');
    await page.waitForFunction(() => !(globalThis as unknown as PageGlobals).chorusPlayground.mic.on);
    expect(await page.getAttribute('#voice', 'data-state')).toBe('off');
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('starts a new session: the transcript and context cleared, the next turn read without the old ones', async () => {
    const before = await snapshot();
    const lastTyped = before.responses.filter((r) => r.source === 'text').at(-1)!;
    const oldId = await page.evaluate(() => (globalThis as unknown as PageGlobals).chorusPlayground.session!.id);
    await page.click('#newSession');
    await page.waitForFunction((id) => {
      const s = (globalThis as unknown as PageGlobals).chorusPlayground.session;
      return s !== null && s.id !== id;
    }, oldId);
    const cleared = await snapshot();
    expect(cleared.turns).toEqual([]);
    expect(cleared.responses).toEqual([]);
    expect(cleared.context).toBeNull();
    expect(await page.locator('#transcript li').count()).toBe(0);
    expect(await page.textContent('#contextText')).toBe('–');

    await page.fill('#maxTokens', String(TYPED_MAX_TOKENS));
    await page.dispatchEvent('#maxTokens', 'change');
    await page.fill('#prompt', 'Tell me more.'); // the same words as the last typed turn of the old session
    await page.click('#send');
    await page.waitForFunction(() => {
      const rs = (globalThis as unknown as PageGlobals).chorusPlayground.responses;
      return rs.length === 1 && rs[0].status !== 'in_progress';
    });
    const after = await snapshot();
    expect(after.turns.map((t) => `${t.role}:${t.text === '' ? '' : 'text'}`)).toEqual(['user:text', 'assistant:text']);
    // The old session's turns (an image, two typed turns, two spoken ones) are not in the new prompt.
    const fresh = after.responses[0].usage!;
    expect(fresh.input_tokens).toBeLessThan(lastTyped.usage!.input_tokens);
    expect(fresh.input_token_details.image_tokens).toBe(0);
    expect(after.context!.inputTokens).toBe(fresh.input_tokens);

    // The next turn reads the first from the prefix cache, and the context line says how much.
    await page.fill('#prompt', 'And then?');
    await page.click('#send');
    await page.waitForFunction(() => {
      const rs = (globalThis as unknown as PageGlobals).chorusPlayground.responses;
      return rs.length === 2 && rs[1].status !== 'in_progress';
    });
    const next = await snapshot();
    const cached = next.responses[1].usage!.input_token_details.cached_tokens;
    expect(cached).toBeGreaterThan(0);
    expect(next.context!.cachedTokens).toBe(cached);
    expect(await page.textContent('#contextText')).toContain(
      `; ${cached} of ${next.context!.inputTokens} prompt tokens cached`,
    );
    expect(pageErrors).toEqual([]);
  }, 30_000);
});

describe('playground camera', () => {
  it('sends a JPEG frame a second while on, keeps frames out of the transcript, and answers from them', async () => {
    const cam = await browser.newPage(); // its own Realtime session: the voice page's conversation is not touched
    const frames: { imageUrl: string; id: string }[] = [];
    cam.on('websocket', (ws) =>
      ws.on('framesent', ({ payload }) => {
        const e = JSON.parse(String(payload)) as {
          type: string;
          item?: { id: string; content: { type: string; image_url?: string }[] };
        };
        const part = e.item?.content[0];
        if (e.type === 'conversation.item.create' && part?.type === 'input_image')
          frames.push({ imageUrl: part.image_url!, id: e.item!.id });
      }),
    );
    const camState = () =>
      cam.evaluate(() => {
        const s = (globalThis as unknown as PageGlobals).chorusPlayground;
        return { camera: s.camera, turns: s.turns, context: s.context, responses: s.responses.length };
      });
    try {
      await cam.goto(page.url());
      await cam.waitForSelector('#stages .stage[data-stage-id="code2wav"]');
      expect(await cam.isEnabled('#camera')).toBe(true);
      await cam.click('#camera');
      // The server keeps them (they differ), and the page counts them: three frames in the conversation.
      await cam.waitForFunction(
        () => (globalThis as unknown as PageGlobals).chorusPlayground.camera.inConversation.length >= 3,
        null,
        { timeout: 20_000 },
      );
      expect(await cam.textContent('#camera')).toBe('Stop camera');
      expect(await cam.isVisible('#cameraPreview')).toBe(true);
      // One a second (a timer never fires early), each a JPEG of the camera's picture at most 320 px wide. The gaps
      // are the page's own: its clock at each send is in the frame's id (`cam_<Date.now() base 36>_<n>`); when this
      // process saw a frame go out is later by however long a loaded machine delayed the event.
      const sentAt = frames.map((f) => parseInt(f.id.split('_')[1], 36));
      for (let i = 1; i < sentAt.length; i++) expect(sentAt[i] - sentAt[i - 1]).toBeGreaterThan(900);
      const [kind, base64] = frames[0].imageUrl.split(',');
      expect(kind).toBe('data:image/jpeg;base64');
      const picture = jpeg.decode(Buffer.from(base64, 'base64'), { useTArray: true });
      expect(picture.width).toBe(320);
      expect(picture.height).toBe(240);
      // Frames are not turns: the transcript is empty, the camera line counts them.
      let s = await camState();
      expect(s.turns).toEqual([]);
      expect(s.camera.inConversation.every((id) => frames.some((f) => f.id === id))).toBe(true);
      expect(await cam.textContent('#cameraState')).toMatch(/^camera on: \d+ frames sent, \d+ in the conversation$/);

      await cam.click('#camera');
      expect(await cam.textContent('#camera')).toBe('Start camera');
      expect(await cam.isHidden('#cameraPreview')).toBe(true);
      // A question about what the camera saw: the frames were prefilled as they came, so its prompt starts cached.
      await cam.fill('#maxTokens', '4');
      await cam.fill('#prompt', 'What did the camera see?');
      await cam.click('#send');
      await cam.waitForFunction(() => {
        const rs = (globalThis as unknown as PageGlobals).chorusPlayground.responses;
        return rs.length === 1 && rs[0].status !== 'in_progress';
      });
      s = await camState();
      expect(s.context!.cachedTokens).toBeGreaterThan(0);
      expect(s.turns.map((t) => t.role)).toEqual(['user', 'assistant']);
      expect(pageErrors).toEqual([]);
    } finally {
      await cam.close();
    }
  }, 60_000);
});
