/** Code2WavCore with a fake vocoder: chunks decode in order, context is never re-emitted, errors end requests. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { StageToMain } from '../../src/worker/messages.ts';
import type { Code2WavItem, Code2WavRunner } from '../../stages/types.ts';
import type { AudioBody, ChunkBody } from '../../src/common/payloads.ts';
import { code2wavStatsOf } from '../../stages/code2wav/protocol.ts';
import { Code2WavCore } from '../../stages/code2wav/Code2WavCore.ts';
import { configWith } from '../helpers/engine.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { stepTraceFile } from '../helpers/stepTraceFile.ts';

const Q = 2;
const SPF = 4; // samples per frame

/** Sample s of frame t is (codebook-0 code of t) + s / 10: the audio says which frame it came from. */
class FakeVocoder implements Code2WavRunner {
  readonly numCodebooks = Q;
  readonly samplesPerFrame = SPF;
  readonly sampleRateHz = 16_000;
  readonly receptiveFieldFrames = 2;
  readonly stateful = false;
  readonly numStates = 0;
  framesDecoded = 0;
  readonly freed: string[] = [];
  readonly batches: Code2WavItem[][] = [];
  fail = false;
  warms = 0;

  warm(): void {
    this.warms++;
  }

  free(seqId: string): void {
    this.freed.push(seqId);
  }

  decode(items: readonly Code2WavItem[]): Float32Array[] {
    if (this.fail) throw new Error('onnx exploded');
    this.batches.push([...items]);
    for (const it of items) this.framesDecoded += it.numFrames;
    return items.map((it) => {
      const out = new Float32Array((it.numFrames - it.contextFrames) * SPF);
      for (let t = it.contextFrames; t < it.numFrames; t++)
        for (let s = 0; s < SPF; s++) out[(t - it.contextFrames) * SPF + s] = it.codes[t] + s / 10;
      return out;
    });
  }

  async close(): Promise<void> {}
}

const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'code2wav')!;
/** Frames first..first+n-1 (codebook 0 = the frame number), the first `context` already decoded before. */
const frames = (first: number, n: number, context = 0, numCodebooks = Q): ChunkBody => {
  const codes = new Int32Array(numCodebooks * n);
  for (let t = 0; t < n; t++) codes[t] = first + t;
  return { kind: 'codecFrames', codes, numCodebooks, numFrames: n, contextFrames: context };
};

function setup() {
  const adapter = new FakeAdapter();
  const ctx = stageContext(spec, adapter);
  const runner = new FakeVocoder();
  const core = new Code2WavCore(ctx, runner);
  const add = (requestId: string) =>
    core.add({
      type: 'add',
      requestId,
      sampling: spec.defaultSamplingParams,
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [{ instance: 'talker#0', stageId: 'talker' }],
      firstChunkDeadline: Date.now() + 30_000,
      args: {},
    });
  const arrive = (requestId: string, body: ChunkBody | null, final = false, finishReason?: FinishReason) => {
    const chunk = received(requestId, 'talker', 'code2wav', body, final);
    core.onArrivals([{ requestId, chunk: finishReason ? { ...chunk, meta: { ...chunk.meta, finishReason } } : chunk }]);
  };
  const audioOf = (requestId: string) =>
    adapter.sent.filter((c) => c.requestId === requestId && c.body).flatMap((c) => [...(c.body as AudioBody).pcm]);
  /** The audio main would play: frame t gives t, t + .1, t + .2, t + .3. */
  const expectedAudio = (fromFrame: number, toFrame: number) =>
    [...Array(toFrame - fromFrame).keys()].flatMap((i) =>
      [...Array(SPF).keys()].map((s) => Math.fround(fromFrame + i + s / 10)),
    );
  return { adapter, ctx, runner, core, add, arrive, audioOf, expectedAudio };
}

beforeEach(() => resetSeqs());

describe('Code2WavCore', () => {
  it('an add to an idle Code2Wav warms its model once, before its codes come; the adds after it do not', () => {
    const { add, runner } = setup();
    add('a');
    add('b');
    expect(runner.warms).toBe(1);
    expect(runner.batches).toEqual([]); // a warm-up is no request's decode
  });

  it('a warm-up that fails is only logged: the request is added and decoded', () => {
    const { core, add, arrive, audioOf, expectedAudio, runner } = setup();
    runner.warm = () => {
      throw new Error('warm-up exploded');
    };
    add('r');
    arrive('r', frames(0, 2), true);
    expect(core.step()).toBe(true);
    expect(audioOf('r')).toEqual(expectedAudio(0, 2));
  });

  it('decodes chunks in arrival order and never re-emits left context', async () => {
    const { core, add, arrive, audioOf, expectedAudio, adapter, runner, ctx } = setup();
    add('r');
    expect(core.step()).toBe(false); // nothing arrived yet
    arrive('r', frames(0, 2));
    arrive('r', frames(0, 5, 2)); // frames 0-1 as context, 2-4 new
    arrive('r', frames(3, 4, 2), true); // frames 3-4 as context, 5-6 new
    expect(core.step()).toBe(true);
    expect(core.step()).toBe(true);
    expect(core.step()).toBe(true);
    expect(core.step()).toBe(false);
    // One chunk per step, in arrival order, with its context passed to the vocoder.
    expect(runner.batches.map((b) => b.map((i) => [i.numFrames, i.contextFrames]))).toEqual([
      [[2, 0]],
      [[5, 2]],
      [[4, 2]],
    ]);
    // Main gets exactly the non-context samples of frames 0..6, in order: nothing twice, nothing missing.
    expect(audioOf('r')).toEqual(expectedAudio(0, 7));
    const sent = adapter.to('main');
    expect(sent).toHaveLength(3);
    expect(sent.map((c) => c.final)).toEqual([false, false, true]);
    expect(sent.at(-1)).toMatchObject({ final: true, finishReason: 'stop', body: { kind: 'audio' } });
    expect(sent.every((c) => c.body?.kind === 'audio' && c.body.sampleRateHz === 16_000)).toBe(true);
    await expect
      .poll(() => ctx.posted.find((m) => m.type === 'finished'))
      .toMatchObject({ requestId: 'r', finishReason: 'stop', numTokens: 7 });
  });

  it("writes its step trace's lines before main hears the request finished, none before", async () => {
    const { trace: stepTrace, lines } = stepTraceFile('code2wav#0');
    const adapter = new FakeAdapter();
    const base = stageContext(spec, adapter);
    const atFinished: string[][] = [];
    const post = (msg: StageToMain) => {
      if (msg.type === 'finished') atFinished.push(lines());
      base.posted.push(msg);
    };
    const core = new Code2WavCore({ ...base, stepTrace, post }, new FakeVocoder());
    core.add({
      type: 'add',
      requestId: 'r',
      sampling: spec.defaultSamplingParams,
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [{ instance: 'talker#0', stageId: 'talker' }],
      firstChunkDeadline: Date.now() + 30_000,
      args: {},
    });
    core.onArrivals([{ requestId: 'r', chunk: received('r', 'talker', 'code2wav', frames(0, 2), true) }]);
    expect(core.step()).toBe(true);
    expect(lines()).toEqual([]); // the add, the step and its marks are kept until the request ends
    await expect.poll(() => atFinished.length).toBe(1);
    const written = atFinished[0].map((l) => JSON.parse(l) as { m?: string; r?: string; items?: unknown });
    expect(written.filter((w) => w.m === 'add' && w.r === 'r')).toHaveLength(1);
    expect(written.filter((w) => w.items !== undefined)).toHaveLength(1);
  });

  it('an empty final chunk ends the request with an empty final chunk and the upstream reason', async () => {
    const { core, add, arrive, adapter, audioOf, expectedAudio, runner, ctx } = setup();
    add('r');
    arrive('r', frames(0, 1));
    arrive('r', null, true, 'length');
    expect(core.step()).toBe(true);
    expect(core.step()).toBe(true);
    expect(core.step()).toBe(false);
    expect(runner.batches.flat()).toHaveLength(1); // nothing to decode in the empty chunk
    expect(audioOf('r')).toEqual(expectedAudio(0, 1));
    const sent = adapter.to('main');
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({ final: true, finishReason: 'length' });
    expect(sent[1].body).toBeUndefined();
    expect(core.size).toBe(0);
    await expect
      .poll(() => ctx.posted.find((m) => m.type === 'finished'))
      .toMatchObject({ requestId: 'r', finishReason: 'length' });
  });

  it('decodes ready chunks of several requests in one batch', () => {
    const { core, add, arrive, runner, audioOf, expectedAudio } = setup();
    add('a');
    add('b');
    arrive('a', frames(0, 2));
    arrive('b', frames(10, 2));
    expect(core.step()).toBe(true);
    expect(runner.batches).toHaveLength(1);
    expect(runner.batches[0].map((i) => i.seqId).sort()).toEqual(['a', 'b']);
    expect(audioOf('a')).toEqual(expectedAudio(0, 2));
    expect(audioOf('b')).toEqual(expectedAudio(10, 12));
  });

  it('codes with the wrong number of codebooks, or a body that is not frames, fail with FRAME_INVALID', () => {
    const { core, add, arrive, adapter, runner } = setup();
    add('q');
    arrive('q', frames(0, 2, 0, Q + 1));
    expect(adapter.sent.at(-1)).toMatchObject({
      requestId: 'q',
      final: true,
      finishReason: 'error',
      error: { code: 'CHORUS_ERR_FRAME_INVALID' },
    });
    add('t');
    arrive('t', { kind: 'text', tokenIds: [1] });
    expect(adapter.sent.at(-1)).toMatchObject({
      requestId: 't',
      final: true,
      finishReason: 'error',
      error: { code: 'CHORUS_ERR_FRAME_INVALID' },
    });
    expect(adapter.sent.at(-1)?.error?.message).toMatch(/takes codec frames, got text/);
    expect(core.size).toBe(0);
    expect(core.step()).toBe(false);
    expect(runner.batches).toEqual([]);
  });

  it('a vocoder that throws fails every request of that batch with STAGE_FAILED', () => {
    const { core, add, arrive, runner, adapter } = setup();
    add('a');
    add('b');
    arrive('a', frames(0, 2));
    arrive('b', frames(0, 2));
    runner.fail = true;
    expect(core.step()).toBe(true);
    const failed = adapter.sent.filter((c) => c.error?.code === 'CHORUS_ERR_STAGE_FAILED');
    expect(failed.map((c) => c.requestId).sort()).toEqual(['a', 'b']);
    expect(failed.every((c) => c.final && c.finishReason === 'error')).toBe(true);
    expect(adapter.sent.some((c) => c.body !== undefined)).toBe(false); // no audio escaped
    expect(core.size).toBe(0);
    expect(core.step()).toBe(false);
    expect(runner.freed.sort()).toEqual(['a', 'b']); // their vocoder state with them
  });

  it('frees a request`s vocoder state when it finishes, is aborted or fails, and only then', () => {
    const { core, add, arrive, runner } = setup();
    for (const id of ['done', 'aborted', 'bad', 'running']) add(id);
    for (const id of ['done', 'aborted', 'running']) arrive(id, frames(0, 2));
    arrive('done', frames(0, 3, 2), true);
    arrive('bad', frames(0, 2, 0, Q + 1));
    while (core.step());
    core.abort('aborted');
    expect(runner.freed.sort()).toEqual(['aborted', 'bad', 'done']);
    expect(core.size).toBe(1);
  });

  it('reports frames decoded against frames of audio sent (the decode ratio)', () => {
    const { core, add, arrive, runner } = setup();
    add('r');
    arrive('r', frames(0, 4));
    arrive('r', frames(2, 6, 2), true); // 2 frames of left context: decoded again by this stateless vocoder
    while (core.step());
    expect(code2wavStatsOf(core.stats()).code2wav).toEqual({ framesDecoded: 10, audioFrames: 8, states: 0 });
    expect(runner.framesDecoded).toBe(10);
  });
});
