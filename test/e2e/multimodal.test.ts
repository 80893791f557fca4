/**
 * Multimodal input end to end: real stage processes (two encoders, Thinker, Talker, Code2Wav), real models, shared
 * memory. Media goes main -> encoder -> Thinker; encoding never holds up text work, the encoder cache skips repeats,
 * bad media is refused before admission, and encoder failures fail the request or (text_only) cost only the item.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import type { ContentPart, GenerateRequest } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { encoderStatsOf, type EncoderStats } from '../../stages/encoder/protocol.ts';
import { collect, configWith, ownSegments, waitFor, type Collected } from '../helpers/engine.ts';
import { pngBytes, wavBytes } from '../helpers/media.ts';

/** The latest encoder stats per instance, from the stats every stage reports (chorus:stage:stats). */
const encoderStats = new Map<string, EncoderStats>();
const onStats = (m: unknown) => {
  const s = m as { instance: string; kind?: unknown };
  const { encoder } = encoderStatsOf(s);
  if (encoder) encoderStats.set(s.instance, encoder);
};

const ask = (
  content: string | ContentPart[],
  maxTokens: number,
  modalities: GenerateRequest['modalities'] = ['text'],
): GenerateRequest => ({
  messages: [{ role: 'user', content }],
  modalities,
  sampling: { maxTokens, ignoreEos: true, seed: 3 },
  talkerSampling: { ignoreEos: true, seed: 3 },
});

const firstTextMs = (r: Collected, sentAtMs: number) => r.events.find((e) => e.type === 'text')!.atMs - sentAtMs;

/**
 * Suspends a stage process, so whatever reaches it waits; returns a function that kills it (or lets it go on). A
 * stopped stage with work can outlast stage_hang_ms on a loaded machine and be killed as hung: a process already gone
 * is neither killed nor resumed.
 */
function suspend(engine: Orchestrator, instance: string): { kill(): void; resume(): void } {
  const pid = engine.workerOf(instance)!.pid!;
  process.kill(pid, 'SIGSTOP');
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  };
  return { kill: () => signal('SIGKILL'), resume: () => signal('SIGCONT') };
}

beforeAll(() => subscribe('chorus:stage:stats', onStats));
afterAll(() => {
  unsubscribe('chorus:stage:stats', onStats);
  expect(ownSegments()).toEqual([]); // every ring unlinked
});

describe('multimodal (on_encoder_failure: fail)', () => {
  let engine: Orchestrator;

  beforeAll(async () => {
    // A heavier audio encoder than tiny's, so a 30 s clip keeps it busy for most of a second on this machine. No
    // Thinker prefix cache: these tests are about the encoders, and a repeat of an image prompt whose KV the Thinker
    // holds goes to no encoder (src/engine/heldItems.ts; test/e2e/kvHeldSkip.test.ts).
    engine = await Orchestrator.start(
      configWith('tiny-omni.yaml', {
        'model: {} # generated from model_preset; {num_layers: 4} overrides one size; {path: x.onnx} loads a file':
          'model: {num_layers: 6, hidden_size: 384, num_heads: 6, intermediate_size: 1536}',
        'prefix_cache: { max_bytes: 128MiB, block_positions: 16 }': 'prefix_cache: false',
      }),
    );
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
  });

  it(
    'text-only requests keep their TTFT (median within 3x + 200 ms of unloaded) while a 30 s audio is being ' +
      'encoded',
    async () => {
      const textRequest = (i: number) => ask(`Question ${i}: why is the sky blue?`, 3);
      const ttft = async (i: number) => {
        const sentAtMs = Date.now();
        const r = await collect(engine.generate(textRequest(i)));
        return { ttftMs: firstTextMs(r, sentAtMs), doneAtMs: r.done.atMs };
      };
      await ttft(0); // warm
      const unloaded: number[] = [];
      for (let i = 0; i < 5; i++) unloaded.push((await ttft(i)).ttftMs);
      const unloadedMs = [...unloaded].sort((a, b) => a - b)[2];

      const sentAtMs = Date.now();
      const audio = collect(
        engine.generate(
          ask(
            [
              { type: 'text', text: 'Listen: ' },
              { type: 'audio', data: wavBytes(30, 24000, 5), format: 'wav' },
            ],
            3,
          ),
        ),
      );
      let audioFirstTextAtMs = Number.POSITIVE_INFINITY;
      void audio.then((r) => (audioFirstTextAtMs = sentAtMs + firstTextMs(r, sentAtMs)));
      const loaded: { ttftMs: number; doneAtMs: number }[] = [];
      for (let i = 0; i < 6 && Date.now() < audioFirstTextAtMs; i++) loaded.push(await ttft(i));
      const a = await audio;
      expect(a.done.finishReason).toBe('length');
      // Only text requests that were over before the audio request's first text count: they ran while its audio was
      // being decoded and encoded (its prefill follows the encoding, so that comes later still).
      const during = loaded.filter((l) => l.doneAtMs < sentAtMs + firstTextMs(a, sentAtMs));
      expect(during.length).toBeGreaterThanOrEqual(2);
      // Their median: text work queued behind the encoding would wait for most of it (~0.7-0.9 s here) in every one
      // of them, where one slow moment of a machine busy with other tests costs a single request.
      const ttfts = during.map((l) => l.ttftMs).sort((x, y) => x - y);
      expect(ttfts[Math.floor((ttfts.length - 1) / 2)]).toBeLessThanOrEqual(3 * unloadedMs + 200);
    },
    60_000,
  );

  it(
    'the same image in two requests runs the vision encoder once (a cache hit); a different image of the same ' +
      'size changes what the model computes',
    async () => {
      await waitFor('the first stats of the image encoder', () => encoderStats.has('image-encoder#0'), 5_000);
      const base = encoderStats.get('image-encoder#0')!;
      const withImage = (seed: number): GenerateRequest => ({
        ...ask(
          [
            { type: 'text', text: 'What is in this picture? ' },
            { type: 'image', data: pngBytes(224, 160, seed) },
          ],
          10,
        ),
        logprobs: 0,
      });
      // The answer's tokens with their log probabilities: a random-weight model may well write the same words about
      // two pictures, but not with the same odds (the picture's rows are in every step's attention).
      const odds = (r: Collected) => r.events.flatMap((e) => (e.type === 'text' ? (e.logprobs ?? []) : []));
      const first = await collect(engine.generate(withImage(1)));
      const again = await collect(engine.generate(withImage(1)));
      const other = await collect(engine.generate(withImage(2)));
      for (const r of [first, again, other]) expect(r.done.finishReason).toBe('length');
      expect(again.text).toBe(first.text);
      expect(odds(first)).toHaveLength(10);
      expect(odds(again)).toEqual(odds(first));
      expect(odds(other)).not.toEqual(odds(first)); // same placeholder layout (same size), different pixels
      expect(first.done.usage.promptTokens).toBe(other.done.usage.promptTokens);
      await waitFor(
        'the encoder stats to show both runs',
        () => encoderStats.get('image-encoder#0')!.runs === base.runs + 2,
        5_000,
      );
      expect(encoderStats.get('image-encoder#0')).toMatchObject({
        runs: base.runs + 2, // images 1 and 2; the repeat of image 1 was served from the cache
        cacheMisses: base.cacheMisses + 2,
        cacheHits: base.cacheHits + 1,
        cachePinnedBytes: 0,
        queuedItems: 0,
      });
    },
  );

  it('a 30-second audio input goes end to end to text and audio', async () => {
    const r = await collect(
      engine.generate(
        ask(
          [
            { type: 'audio', data: wavBytes(30, 16000, 2), format: 'wav' },
            { type: 'text', text: 'Summarise that.' },
          ],
          12,
          ['text', 'audio'],
        ),
      ),
    );
    expect(r.done.finishReason).toBe('length');
    expect(r.done.usage.completionTokens).toBe(12);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.pcm.length).toBe(12 * 2 * 1920); // 2 codec frames per token, 1920 samples per frame
    expect(r.done.usage.promptTokens).toBeGreaterThan(750); // 25 embeddings per second of audio, plus the text
    expect(r.done.warnings).toBeUndefined();
  }, 60_000);

  it(
    'bad media is refused before admission, naming the item; a body that only fails to decode in the encoder ' +
      'fails the request',
    async () => {
      await waitFor('earlier requests to leave every stage', () => engine.health().every((h) => h.inFlight === 0));
      let refused: unknown;
      try {
        engine.generate(
          ask(
            [
              { type: 'text', text: 'Hi' },
              { type: 'image', data: pngBytes(64, 64) },
              { type: 'audio', data: new TextEncoder().encode('RIFF....not audio'), format: 'wav' },
            ],
            4,
          ),
        );
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(ChorusError);
      expect(refused).toMatchObject({
        code: ErrorCodes.MEDIA_INVALID,
        message: 'messages[0].content[2] (audio): not a WAV file (no RIFF/WAVE header)',
      });
      expect(engine.health().every((h) => h.inFlight === 0)).toBe(true); // nothing was admitted anywhere

      const corrupt = pngBytes(96, 96, 4);
      corrupt.fill(0, 60); // the header is fine (the probe passes), the pixels are not
      const r = await collect(
        engine.generate(
          ask(
            [
              { type: 'text', text: 'Describe ' },
              { type: 'image', data: corrupt },
            ],
            4,
            ['text', 'audio'],
          ),
        ),
      );
      expect(r.done.finishReason).toBe('error');
      expect(r.done.error?.code).toBe(ErrorCodes.MEDIA_INVALID);
      expect(r.done.error?.message).toMatch(/^messages\[0\]\.content\[1\] \(image\): cannot decode PNG/);
      await waitFor('every stage to drop the failed request', () => engine.health().every((h) => h.inFlight === 0));
    },
  );

  it('cancelling a request while its audio is encoded frees it in every stage, the encoders included', async () => {
    await waitFor('the first stats of the audio encoder', () => encoderStats.has('audio-encoder#0'), 5_000);
    const base = encoderStats.get('audio-encoder#0')!;
    const handle = engine.generate(
      ask(
        [
          { type: 'audio', data: wavBytes(20, 24000, 8), format: 'wav' },
          { type: 'text', text: 'What was that?' },
        ],
        8,
        ['text', 'audio'],
      ),
    );
    handle.cancel();
    const r = await collect(handle);
    expect(r.done.finishReason).toBe('cancelled');
    await waitFor('every stage to drop the request', () => engine.health().every((h) => h.inFlight === 0));
    // Whether the clip was encoded before the abort landed or not, nothing of the request stays pinned or queued.
    await waitFor('the audio encoder to report nothing pinned or queued', () => {
      const s = encoderStats.get('audio-encoder#0')!;
      return s !== base && s.cachePinnedBytes === 0 && s.queuedItems === 0;
    });
  });

  it('an encoder that dies fails its requests with a clear error; after its restart media works again', async () => {
    const encoder = suspend(engine, 'image-encoder#0');
    const pending = collect(
      engine.generate(
        ask(
          [
            { type: 'text', text: 'See ' },
            { type: 'image', data: pngBytes(128, 128, 7) },
          ],
          4,
        ),
      ),
    );
    encoder.kill();
    const r = await pending;
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe(ErrorCodes.ENCODER_FAILED);
    expect(r.done.error?.message).toMatch(/^messages\[0\]\.content\[1\] \(image\): encoder stage image-encoder#0 /);
    expect(r.done.error?.message).toMatch(/could not encode \(CHORUS_ERR_STAGE_DIED: stage image-encoder#0 died/);
    await waitFor('the image encoder to restart', () => engine.health().every((h) => h.status === 'ready'), 60_000);
    const again = await collect(
      engine.generate(
        ask(
          [
            { type: 'text', text: 'See ' },
            { type: 'image', data: pngBytes(128, 128, 7) },
          ],
          4,
        ),
      ),
    );
    expect(again.done.finishReason).toBe('length');
    await waitFor('every stage to drop its requests', () => engine.health().every((h) => h.inFlight === 0));
  }, 90_000);
});

describe('multimodal (on_encoder_failure: text_only)', () => {
  let engine: Orchestrator;
  const question = 'Describe this picture.';
  let textOnly: Collected; // the same question without the picture

  beforeAll(async () => {
    engine = await Orchestrator.start(
      configWith('tiny-omni.yaml', {
        'on_encoder_failure: fail': 'on_encoder_failure: text_only',
        '      modality: image\n': '      modality: image\n      timeout_ms: 1500\n',
      }),
    );
    textOnly = await collect(engine.generate(ask(question, 8)));
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
  });

  it(
    'an encoder that does not answer in time costs only its item: the answer is the text-only one, and says ' + 'so',
    async () => {
      const encoder = suspend(engine, 'image-encoder#0');
      try {
        const r = await collect(
          engine.generate(
            ask(
              [
                { type: 'text', text: question },
                { type: 'image', data: pngBytes(200, 200, 9) },
              ],
              8,
            ),
          ),
        );
        expect(r.done.finishReason).toBe('length');
        expect(r.text).toBe(textOnly.text); // the dropped span leaves exactly the text-only prompt
        // Usage counts what the answer read: not the image it left out.
        expect(r.done.usage.promptTokenDetails).toEqual({ ...textOnly.done.usage.promptTokenDetails, image: 0 });
        expect(r.done.usage.promptTokens).toBe(textOnly.done.usage.promptTokens);
        expect(r.done.warnings).toHaveLength(1);
        expect(r.done.warnings![0]).toMatch(
          /^messages\[0\]\.content\[1\] \(image\) was left out of the answer: CHORUS_ERR_CHUNK_TIMEOUT: /,
        );
        // The hint names the knob that fired: the encoder's timeout_ms, not the chunk policy's.
        expect(r.done.warnings![0]).toContain("raise the encoder's timeout_ms (stage image-encoder)");
      } finally {
        encoder.resume();
      }
      // Resumed, the encoder gets the request and main's abort of it: no stage keeps anything of it.
      await waitFor('every stage to drop the request', () => engine.health().every((h) => h.inFlight === 0));
      // On a loaded machine the stopped encoder can outlast stage_hang_ms and be restarted as hung: the next test
      // needs it back.
      await waitFor('every stage to be ready', () => engine.health().every((h) => h.status === 'ready'));
    },
    30_000,
  );

  it('an encoder that dies costs only its item; the request goes on text-only', async () => {
    const encoder = suspend(engine, 'image-encoder#0');
    const pending = collect(
      engine.generate(
        ask(
          [
            { type: 'text', text: question },
            { type: 'image', data: pngBytes(200, 200, 10) },
          ],
          8,
        ),
      ),
    );
    encoder.kill();
    const r = await pending;
    expect(r.done.finishReason).toBe('length');
    expect(r.text).toBe(textOnly.text);
    expect(r.done.warnings![0]).toMatch(/^messages\[0\]\.content\[1\] \(image\) was left out of the answer: /);
    expect(r.done.warnings![0]).toMatch(/left out of the answer: CHORUS_ERR_STAGE_DIED: stage image-encoder#0 died/);
    await waitFor('the image encoder to restart', () => engine.health().every((h) => h.status === 'ready'), 60_000);
    await waitFor('every stage to drop its requests', () => engine.health().every((h) => h.inFlight === 0));
  }, 90_000);
});
