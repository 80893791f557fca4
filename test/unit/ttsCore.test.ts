/**
 * TtsCore with a fake voice and phonemizer: the Thinker's tokens become phrases whose audio leaves before the text
 * ends, in order, resampled to 24 kHz; the last audio carries the Thinker's finish reason; requests with sentences
 * ready share one synthesis, unless sharing it would make the listener about to run dry late; a later phrase is cut
 * at its clause mark before its sentence ends when its listener would run dry waiting (the lead rule); an aborted
 * request's late phonemes are dropped; a failed synthesis ends its requests.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FinishReason } from '../../src/common/engine.ts';
import type { AudioBody, ChunkBody } from '../../src/common/payloads.ts';
import type { StageSpec } from '../../src/common/graph.ts';
import type { SchedulingPolicy } from '../../src/sched/playback.ts';
import { ByteTokenizer } from '../../src/tokenizer/ByteTokenizer.ts';
import type { PiperItem } from '../../stages/tts/OnnxPiperRunner.ts';
import { ttsStatsOf } from '../../stages/tts/protocol.ts';
import { TtsCore, type SentencePhonemizer, type VoiceRunner } from '../../stages/tts/TtsCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, stageContext } from '../helpers/fakeStage.ts';

const VOICE_RATE_HZ = 22050;
const SAMPLES_PER_ID = 147; // 147 samples at 22.05 kHz -> 160 at 24 kHz

/** Every id gives SAMPLES_PER_ID samples; the batches are recorded; `clock` (performance.now's, in a test that
 * mocks it) advances msPerPosition for each row position of a run, as a voice's compute would. */
class FakeVoice implements VoiceRunner {
  clock = 0;
  msPerPosition = 0;
  readonly sampleRateHz = VOICE_RATE_HZ;
  readonly voice = { phonemeIdMap: phonemeMap() };
  audioSeconds = 0;
  computeMs = 0;
  readonly batches: string[][] = [];
  fail = false;

  synthesize(items: readonly PiperItem[]): Float32Array[] {
    if (this.fail) throw new Error('onnx exploded');
    this.batches.push(items.map((i) => i.seqId));
    this.clock += this.msPerPosition * items.length * Math.max(...items.map((i) => i.ids.length));
    return items.map((i) => new Float32Array(i.ids.length * SAMPLES_PER_ID).fill(0.1));
  }
}

/** Letters are their own phonemes: a map of a-z, space and marks. */
function phonemeMap(): Record<string, number[]> {
  const map: Record<string, number[]> = { _: [0], '^': [1], $: [2], ' ': [3], ',': [4], '.': [5], '?': [6] };
  for (let c = 0; c < 26; c++) map[String.fromCharCode(97 + c)] = [10 + c];
  return map;
}

/** One sentence per phrase, its symbols the phrase's lower-cased characters; each call recorded, held until let go. */
class FakePhonemizer implements SentencePhonemizer {
  readonly phrases: string[] = [];
  hold: Promise<void> = Promise.resolve();

  async sentences(text: string): Promise<string[][]> {
    this.phrases.push(text);
    await this.hold;
    return [[...text.toLowerCase()]];
  }
}

const base = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'code2wav')!;
const spec: StageSpec = { ...base, stageId: 'tts', engine: { ...base.engine, maxNumSeqs: 4 } };
const tokenizer = new ByteTokenizer(512);

function setup(scheduling: SchedulingPolicy = 'fifo', leadMargin = 0) {
  const adapter = new FakeAdapter();
  // The core wakes its loop once per phrase phonemized and once for the end: tests wait for that many wake-ups.
  let numWakes = 0;
  let waiters: { atCount: number; resolve: () => void }[] = [];
  const onWake = () => {
    numWakes++;
    waiters = waiters.filter((w) => (numWakes >= w.atCount ? (w.resolve(), false) : true));
  };
  const ctx = { ...stageContext(spec, adapter), wake: onWake, scheduling };
  const voice = new FakeVoice();
  const phonemizer = new FakePhonemizer();
  const phrases = { firstMinChars: 5, firstMaxWords: 0, maxChars: 200 };
  const core = new TtsCore(ctx, { runner: voice, phonemizer, tokenizer, phrases, leadMargin });
  /** Resolves after n more wake-ups (phrases phonemized, or ends queued) than so far. */
  const wakes = (n: number) => {
    const atCount = numWakes + n;
    return new Promise<void>((resolve) => waiters.push({ atCount, resolve }));
  };
  const add = (requestId: string, firstPacketDeadlineMs?: number) =>
    core.add({
      type: 'add',
      requestId,
      sampling: spec.defaultSamplingParams,
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [{ instance: 'thinker#0', stageId: 'thinker' }],
      firstChunkDeadline: Date.now() + 30_000,
      args:
        firstPacketDeadlineMs === undefined
          ? {}
          : { playback: { firstPacketDeadlineMs, ttfpTargetMs: null, frameMs: 20, downstreamMs: 0 } },
    });
  const text = (requestId: string, t: string, final = false, finishReason?: FinishReason) => {
    const body: ChunkBody = { kind: 'text', tokenIds: tokenizer.encode(t) };
    const chunk = received(requestId, 'thinker', 'tts', body, final);
    core.onArrivals([{ requestId, chunk: finishReason ? { ...chunk, meta: { ...chunk.meta, finishReason } } : chunk }]);
  };
  const sent = (requestId: string) => adapter.sent.filter((c) => c.requestId === requestId);
  const runAll = () => {
    while (core.step());
  };
  return { adapter, ctx, voice, phonemizer, core, add, text, sent, runAll, wakes };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('TtsCore', () => {
  it('speaks the first phrase before the text ends, then the rest, the last audio final', async () => {
    const t = setup();
    t.add('r1');
    let woke = t.wakes(1);
    t.text('r1', 'Hello there, the capi');
    await woke;
    t.runAll();
    expect(t.phonemizer.phrases).toEqual(['Hello there,']);
    const first = t.sent('r1');
    expect(first).toHaveLength(1);
    expect(first[0].final).toBe(false);
    const pcm = (first[0].body as AudioBody).pcm;
    expect((first[0].body as AudioBody).sampleRateHz).toBe(24000);
    // "hello there," -> BOS, pad, 12 symbols each + pad, EOS = 27 ids; 27 * 147 samples at 22.05 kHz -> 27 * 160.
    expect(pcm.length).toBe(27 * 160);
    woke = t.wakes(2);
    t.text('r1', 'tal is Paris', true, 'length');
    await woke;
    t.runAll();
    expect(t.phonemizer.phrases).toEqual(['Hello there,', 'the capital is Paris']);
    const all = t.sent('r1');
    expect(all).toHaveLength(2);
    expect(all[1]).toMatchObject({ final: true, finishReason: 'length' });
    expect((all[1].body as AudioBody).pcm.length).toBeGreaterThan(0);
    expect(ttsStatsOf(t.core.stats()).tts?.phrases).toBe(2);
  });

  it('ends with an empty final chunk when the text ends with nothing left to say', async () => {
    const t = setup();
    t.add('r1');
    const woke = t.wakes(1);
    t.text('r1', 'Hello there, ');
    await woke;
    t.runAll();
    const end = t.wakes(1);
    t.text('r1', '', true);
    await end;
    t.runAll();
    expect(t.sent('r1').map((c) => [c.final, c.body !== undefined])).toEqual([
      [false, true],
      [true, false],
    ]);
  });

  it('synthesizes the ready sentences of several requests in one batch', async () => {
    const t = setup();
    t.add('a');
    t.add('b');
    let release: () => void = () => {};
    t.phonemizer.hold = new Promise((resolve) => (release = resolve));
    const woke = t.wakes(4); // each request: its phrase, then its end
    t.text('a', 'Good morning.', true);
    t.text('b', 'Good evening.', true);
    release();
    await woke;
    t.runAll();
    expect(t.voice.batches[0]).toEqual(['a', 'b']);
    expect(t.sent('a').at(-1)?.final).toBe(true);
    expect(t.sent('b').at(-1)?.final).toBe(true);
  });

  it('runs a listener about to run dry alone when sharing the run would make it late, else in one run', async () => {
    const t = setup('playback');
    vi.spyOn(performance, 'now').mockImplementation(() => t.voice.clock);
    t.voice.msPerPosition = 10; // a 14-id sentence: 140 ms alone, 280 ms in a run of two
    const now = Date.now();
    t.add('warm', now + 60_000);
    let woke = t.wakes(1);
    t.text('warm', 'Good morning, '); // its run measures the voice's cost
    await woke;
    t.runAll();
    const round = async (urgentSlackMs: number) => {
      t.voice.batches.length = 0;
      const [calm, urgent] = [`calm${urgentSlackMs}`, `urgent${urgentSlackMs}`];
      t.add(calm, Date.now() + 60_000);
      t.add(urgent, Date.now() + urgentSlackMs);
      woke = t.wakes(2);
      t.text(calm, 'Good evening, ');
      t.text(urgent, 'Good morning, ');
      await woke;
      t.runAll();
      return t.voice.batches;
    };
    expect(await round(200)).toEqual([['urgent200'], ['calm200']]); // 280 ms together > 200 ms of slack
    expect(await round(5_000)).toEqual([['urgent5000', 'calm5000']]);
  });

  it("cuts a later phrase at its clause mark when its listener's runway is short, not when ample or lost", async () => {
    /** The phrases of an answer whose first phrase was sent at t0 and whose next text arrives at t0 + elapsedMs. */
    const phrasesAfter = async (elapsedMs: number) => {
      const t = setup('playback', 2);
      vi.spyOn(performance, 'now').mockImplementation(() => t.voice.clock);
      t.voice.msPerPosition = 1; // 1 ms of synthesis per id; an id is 160 samples at 24 kHz: 6.67 ms of audio
      const t0 = Date.now();
      const clock = vi.spyOn(Date, 'now').mockReturnValue(t0);
      t.add('r1', t0 + 60_000);
      const woke = t.wakes(1);
      t.text('r1', 'Hello there, '); // 12 characters, 27 ids: 180 ms of audio, 27 ms of synthesis
      await woke;
      t.runAll();
      clock.mockReturnValue(t0 + elapsedMs);
      // 29 characters pending: ~65 ids, 65 ms of synthesis; the runway is 180 ms - elapsedMs.
      t.text('r1', 'the capital of France, which ');
      const done = t.wakes(2); // the last phrase phonemized and the end queued (all phrases reached the phonemizer)
      t.text('r1', 'is Paris.', true);
      await done;
      return t.phonemizer.phrases.slice(1);
    };
    const whole = ['the capital of France, which is Paris.'];
    expect(await phrasesAfter(80)).toEqual(['the capital of France,', 'which is Paris.']); // 100 ms: covered, < 2x
    expect(await phrasesAfter(0)).toEqual(whole); // 180 ms: more than twice what it needs, the phrase waits
    expect(await phrasesAfter(150)).toEqual(whole); // 30 ms: late anyway, the sentence is not split
  });

  it('drops the phonemes of a request aborted while they were made', async () => {
    const t = setup();
    t.add('r1');
    let release: () => void = () => {};
    t.phonemizer.hold = new Promise((resolve) => (release = resolve));
    const woke = t.wakes(3); // two phrases and the end
    t.text('r1', 'Hello there, you. ', true);
    t.core.abort('r1');
    release();
    await woke;
    expect(t.phonemizer.phrases).toEqual([]); // aborted before its phrases reached the phonemizer
    expect(t.core.step()).toBe(false);
    expect(t.sent('r1').filter((c) => c.body !== undefined)).toEqual([]);
  });

  it('fails the requests of a synthesis that throws, with the stage error', async () => {
    const t = setup();
    t.add('r1');
    const woke = t.wakes(2);
    t.text('r1', 'Hello there.', true);
    await woke;
    t.voice.fail = true;
    t.runAll();
    expect(t.sent('r1').at(-1)).toMatchObject({ final: true, finishReason: 'error' });
  });

  it('refuses a body that is not text', () => {
    const t = setup();
    t.add('r1');
    const rows: ChunkBody = { kind: 'audio', pcm: new Float32Array(4), sampleRateHz: 24000 };
    t.core.onArrivals([{ requestId: 'r1', chunk: received('r1', 'thinker', 'tts', rows) }]);
    expect(t.sent('r1').at(-1)).toMatchObject({ final: true, finishReason: 'error' });
  });
});
