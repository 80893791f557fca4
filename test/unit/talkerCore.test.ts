/** TalkerCore with a fake runner: rows in, codec frames out, driven step by step like the stage loop does. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TalkerBatchItem, TalkerRunner, TalkerStepOutput } from '../../stages/types.ts';
import type { ChunkBody, CodecFramesBody } from '../../src/common/payloads.ts';
import { initialChunkFrames } from '../../src/sched/chunkPolicy.ts';
import { FIRST_AUDIO_FIRST_DEFAULTS } from '../../src/sched/FirstAudioFirst.ts';
import { SLICE_RESIZE_STEPS } from '../../src/sched/SpeakingSlices.ts';
import { TalkerCore } from '../../stages/talker/TalkerCore.ts';
import type { AddRequest, PlaybackPlan } from '../../src/worker/messages.ts';
import { firstAudioMessage } from '../../stages/requestEvents.ts';
import type { TalkerArgs } from '../../stages/talker/protocol.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';

const DIM = 4; // condition width
const Q = 2; // codebooks

/** Frame k of a sequence has codes [k, 100 + k]; `eosAt` makes frame k the end of speech. */
class FakeTalkerRunner implements TalkerRunner {
  readonly conditionDim = DIM;
  readonly numCodebooks = Q;
  readonly framesPerToken = 2;
  readonly padRow = new Float32Array(DIM);
  readonly kvBytesPerToken = 1;
  readonly steps: TalkerBatchItem[][] = [];
  readonly freed: string[] = [];
  eosAt: number | null = null;
  warms = 0;
  /** Each step takes this long on vitest's fake clock (0: no time). */
  stepMs = 0;
  private readonly sampled = new Map<string, number>();

  warm(): void {
    this.warms++;
  }

  execute(items: readonly TalkerBatchItem[]): TalkerStepOutput[] {
    this.steps.push([...items]);
    if (this.stepMs > 0) vi.advanceTimersByTime(this.stepMs);
    return items.map((it) => {
      const k = this.sampled.get(it.seqId) ?? 0;
      if (it.sample !== false) this.sampled.set(it.seqId, k + 1);
      return { seqId: it.seqId, codes: Int32Array.of(k, 100 + k), eos: this.eosAt === k };
    });
  }

  kvBytes(): number {
    return 0;
  }

  free(seqId: string): void {
    this.freed.push(seqId);
  }

  moveSequence(): void {}
  copySequence(): void {}
  async close(): Promise<void> {}
}

const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'talker')!;

/** An add for request `requestId` (200 frames at most, end of speech ignored) with the kind's `args`. */
const addMessage = (
  requestId: string,
  args: TalkerArgs,
  extra: Partial<AddRequest<TalkerArgs>> = {},
): AddRequest<TalkerArgs> => ({
  type: 'add',
  requestId,
  sampling: { ...spec.defaultSamplingParams, ignoreEos: true, maxTokens: 200 },
  downstream: [{ instance: 'code2wav#0', stageId: 'code2wav' }],
  upstreams: [{ instance: 'thinker#0', stageId: 'thinker' }],
  firstChunkDeadline: Date.now() + 30_000,
  args,
  ...extra,
});
/** `numRows` rows whose every value is the row's index in the request (from `firstRow`), so a step's rows say where
 * they came from. */
const rowsBody = (numRows: number, promptRows?: number, width = DIM, firstRow = 0): ChunkBody => {
  const rows = new Float32Array(numRows * width);
  for (let r = 0; r < numRows; r++) rows.fill(firstRow + r, r * width, (r + 1) * width);
  return {
    kind: 'talkerRows',
    rows,
    numRows,
    conditionDim: width,
    ...(promptRows !== undefined ? { promptRows } : {}),
  };
};

function setup(ignoreEos = true, maxTokens = 100, extra: TalkerArgs = {}, asyncChunk = true) {
  const adapter = new FakeAdapter();
  const ctx = { ...stageContext(spec, adapter), asyncChunk };
  const runner = new FakeTalkerRunner();
  const core = new TalkerCore(ctx, runner);
  const add: AddRequest<TalkerArgs> = {
    type: 'add',
    requestId: 'r',
    sampling: { ...spec.defaultSamplingParams, ignoreEos, maxTokens },
    downstream: [{ instance: 'code2wav#0', stageId: 'code2wav' }],
    upstreams: [{ instance: 'thinker#0', stageId: 'thinker' }],
    firstChunkDeadline: Date.now() + 30_000,
    args: { initialCodecChunkFrames: 2, ...extra },
  };
  core.add(add);
  const arrive = (body: ChunkBody | null, final = false) =>
    core.onArrivals([{ requestId: 'r', chunk: received('r', 'thinker', 'talker', body, final) }]);
  const runAll = () => {
    let n = 0;
    while (core.step()) if (++n > 1_000) throw new Error('the talker never stops');
    return n;
  };
  const frames = () => adapter.to('code2wav#0').map((c) => c.body as CodecFramesBody | undefined);
  /** New frames sent to code2wav (context frames not counted). */
  const newFrames = () => frames().reduce((n, b) => n + (b ? b.numFrames - b.contextFrames : 0), 0);
  /** For every sampled frame, in order: the (first value of the) row fed at the sampling position. */
  const sampledRows = () =>
    runner.steps.flatMap((items) => items.filter((it) => it.sample !== false).map((it) => it.rows[it.rows.length - 1]));
  return { adapter, ctx, runner, core, add, arrive, runAll, frames, newFrames, sampledRows };
}

beforeEach(() => resetSeqs());

describe('TalkerCore', () => {
  it('computes nothing before the first rows arrive', () => {
    const { core, runner } = setup();
    expect(core.step()).toBe(false);
    expect(core.step()).toBe(false);
    expect(runner.steps).toEqual([]);
  });

  it('an add to an idle Talker warms its model once, before the rows come; a second add does not', () => {
    const { core, runner, add } = setup();
    expect(runner.warms).toBe(1); // never stepped: idle
    expect(runner.steps).toEqual([]); // a warm-up is not a step of the request
    core.add({ ...add, requestId: 'r2' });
    expect(runner.warms).toBe(1);
  });

  it('makes framesPerToken frames per text row, then ends with the last chunk final', () => {
    const { arrive, runAll, frames, newFrames, sampledRows, adapter, ctx } = setup();
    arrive(rowsBody(3 + 1, 3)); // 3 prompt rows + the first token's row (rows 0..3)
    arrive(rowsBody(2, undefined, DIM, 4)); // two more text tokens (rows 4, 5)
    arrive(null, true); // the thinker is done
    runAll();
    // Exactly 6 frames made and sent; frame k is sampled at position 3 + k, fed the row of text token k / 2.
    expect(sampledRows()).toEqual([3, 3, 4, 4, 5, 5]);
    expect(newFrames()).toBe(3 * 2);
    const sent = adapter.to('code2wav#0');
    expect(sent.slice(0, -1).every((c) => !c.final)).toBe(true);
    expect(sent.at(-1)).toMatchObject({ final: true, finishReason: 'stop' });
    expect(frames().every((b) => b === undefined || (b.kind === 'codecFrames' && b.numCodebooks === Q))).toBe(true);
    // The frames reach the vocoder in order: codebook 0 of frame k is k, codebook 1 is 100 + k.
    const codebook = (q: number) =>
      frames().flatMap((b) =>
        b ? [...b.codes.subarray(q * b.numFrames + b.contextFrames, (q + 1) * b.numFrames)] : [],
      );
    expect(codebook(0)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(codebook(1)).toEqual([100, 101, 102, 103, 104, 105]);
    return expect
      .poll(() => ctx.posted.find((m) => m.type === 'finished'))
      .toMatchObject({ requestId: 'r', finishReason: 'stop', numTokens: 6 });
  });

  it('sends left context with later chunks, none when its Code2Wav is stateful (codecLeftContextFrames 0)', () => {
    const contexts = (extra: TalkerArgs) => {
      const { arrive, runAll, frames } = setup(true, 100, extra);
      arrive(rowsBody(3 + 10, 3)); // 10 text rows: 20 frames, in chunks 2, 2, 4, 8, 4
      arrive(null, true);
      runAll();
      return frames().map((b) => b?.contextFrames ?? 0);
    };
    expect(contexts({})).toEqual([0, 2, 4, 8, 16]);
    expect(contexts({ codecLeftContextFrames: 0 })).toEqual([0, 0, 0, 0, 0]);
  });

  /** r's prompt and 3 tokens' rows, r's prefill, then s added with the same: the step after decides about s. */
  function twoRequests(asyncChunk: boolean) {
    const t = setup(true, 100, { initialCodecChunkFrames: 4 }, asyncChunk);
    t.arrive(rowsBody(3 + 3, 3)); // 3 prompt rows + 3 tokens' rows: frames 0..5 can be made
    t.core.step(); // r's prefill, frame 0
    t.core.add(addMessage('s', {}, { sampling: { ...spec.defaultSamplingParams, ignoreEos: true, maxTokens: 100 } }));
    t.core.onArrivals([{ requestId: 's', chunk: received('s', 'thinker', 'talker', rowsBody(3 + 3, 3), false) }]);
    return { ...t, seqs: () => t.runner.steps.at(-1)!.map((i) => i.seqId) };
  }

  it('admits no new prompt while a request computes its first chunk (first audio first)', () => {
    const { core, adapter, seqs } = twoRequests(true);
    // r's frames 1..3 make its 4-frame first chunk; s's prompt waits, so each of those steps is one decode.
    for (let i = 1; i <= 3; i++) {
      expect(adapter.to('code2wav#0')).toHaveLength(0);
      core.step();
      expect(seqs()).toEqual(['r']);
    }
    expect(adapter.to('code2wav#0')).toHaveLength(1);
    core.step(); // r's first chunk is out: s is admitted, its prompt in a step of its own (prefill first)
    expect(seqs()).toEqual(['s']);
    // s's first chunk (the first rung: r speaks, so s makes its first chunk alone) is made in steps of its own
    // (first outputs first): r waits one step, not the chunk's frames in a batch with it.
    expect(adapter.to('code2wav#0')).toHaveLength(1);
    core.step();
    expect(seqs()).toEqual(['s']);
    expect(adapter.to('code2wav#0')).toHaveLength(2);
    core.step(); // then both decode
    expect(seqs()).toEqual(['r', 's']);
  });

  it('without async_chunk (all audio at the end, no first chunk to hurry) a new prompt is admitted at once', () => {
    const { core, seqs } = twoRequests(false);
    core.step(); // s's prompt at once, ahead of r's decode (prefill first)
    expect(seqs()).toEqual(['s']);
    core.step();
    expect(seqs()).toEqual(['r', 's']);
  });

  it('a frame whose row has not arrived waits for it (WAITING_FOR_CHUNK)', () => {
    const { arrive, runAll, core, runner, newFrames, sampledRows, adapter } = setup();
    arrive(rowsBody(2 + 1, 2)); // one text row: 2 frames
    runAll();
    expect(sampledRows()).toEqual([2, 2]);
    const steps = runner.steps.length;
    expect(core.step()).toBe(false); // frame 2 needs a row that is not here yet
    expect(core.step()).toBe(false);
    expect(runner.steps.length).toBe(steps);
    arrive(rowsBody(1, undefined, DIM, 3));
    expect(core.step()).toBe(true);
    runAll();
    expect(sampledRows()).toEqual([2, 2, 3, 3]);
    expect(core.step()).toBe(false); // waits again: the thinker has not said it is done
    expect(adapter.to('code2wav#0').some((c) => c.final)).toBe(false);
    arrive(null, true);
    runAll();
    expect(newFrames()).toBe(4);
    expect(adapter.to('code2wav#0').at(-1)).toMatchObject({ final: true, finishReason: 'stop' });
  });

  it("sends a first chunk no longer than the rows of a held Thinker's tokens make (first-packet hold)", () => {
    // The request asks for 12 frames first, but the Thinker holds after 2 tokens until that audio is out.
    const { arrive, runAll, frames } = setup(true, 100, { initialCodecChunkFrames: 12, firstPacketTokens: 2 });
    arrive(rowsBody(3 + 2, 3)); // prompt rows + the 2 tokens' rows, and nothing more until the first audio
    runAll();
    expect(frames().map((b) => b?.numFrames)).toEqual([2 * 2]);
  });

  it('sizes the first chunk without that cap when main ended the hold before the rows came (load arrived)', () => {
    const { core, arrive, runAll, frames } = setup(true, 100, { initialCodecChunkFrames: 12, firstPacketTokens: 2 });
    core.onKindMessage('r', firstAudioMessage('r').body);
    arrive(rowsBody(3 + 6, 3)); // the Thinker went on: 6 tokens' rows, 12 frames
    runAll();
    expect(frames().map((b) => b?.numFrames)).toEqual([12]);
  });

  it('keeps a first chunk already sized when the hold ends after it', () => {
    const { core, arrive, runAll, frames, newFrames } = setup(true, 100, {
      initialCodecChunkFrames: 12,
      firstPacketTokens: 2,
    });
    arrive(rowsBody(3 + 2, 3));
    runAll();
    core.onKindMessage('r', firstAudioMessage('r').body); // main has the first audio now
    arrive(rowsBody(4, undefined, DIM, 5));
    runAll();
    expect(frames()[0]?.numFrames).toBe(4);
    expect(newFrames()).toBe(4 + 4); // the next chunk is at most as long as the audio before it
  });

  it('end of speech from the model ends the request unless ignore_eos', () => {
    const stops = setup(false);
    stops.runner.eosAt = 1;
    stops.arrive(rowsBody(1 + 1, 1));
    stops.arrive(rowsBody(5, undefined, DIM, 2), true);
    stops.runAll();
    expect(stops.adapter.to('code2wav#0').at(-1)).toMatchObject({ final: true, finishReason: 'stop' });
    expect(stops.newFrames()).toBe(1); // frame 0; the end-of-speech frame is not sent
    expect(stops.runner.freed).toContain('r');

    resetSeqs();
    const goesOn = setup(true);
    goesOn.runner.eosAt = 1;
    goesOn.arrive(rowsBody(1 + 1, 1));
    goesOn.arrive(rowsBody(5, undefined, DIM, 2), true);
    goesOn.runAll();
    expect(goesOn.newFrames()).toBe(6 * 2);
    expect(goesOn.adapter.to('code2wav#0').at(-1)).toMatchObject({ final: true, finishReason: 'stop' });
  });

  it('max_tokens frames end the request with length when the text had more to say', () => {
    const { arrive, runAll, newFrames, adapter } = setup(true, 4);
    arrive(rowsBody(1 + 3, 1), true); // 3 text rows: 6 frames wanted, 4 allowed
    runAll();
    expect(newFrames()).toBe(4);
    expect(adapter.to('code2wav#0').at(-1)).toMatchObject({ final: true, finishReason: 'length' });
  });

  it('all the text voiced within max_tokens is a stop, even when it takes exactly max_tokens frames', () => {
    const { arrive, runAll, newFrames, adapter } = setup(true, 6);
    arrive(rowsBody(1 + 3, 1), true); // 3 text rows: 6 frames, 6 allowed
    runAll();
    expect(newFrames()).toBe(6);
    expect(adapter.to('code2wav#0').at(-1)).toMatchObject({ final: true, finishReason: 'stop' });
  });

  it('a first chunk of prompt rows only samples nothing until the first token row arrives', () => {
    const { arrive, runAll, sampledRows, newFrames } = setup();
    arrive(rowsBody(3, 3)); // the prompt rows, not yet the first token's
    runAll();
    expect(sampledRows()).toEqual([]); // no frame may come from a prompt position
    arrive(rowsBody(1, undefined, DIM, 3), true);
    runAll();
    expect(sampledRows()).toEqual([3, 3]);
    expect(newFrames()).toBe(2);
  });

  it('prefills a prompt that comes in pieces piece by piece, computing only the rows that are in', () => {
    const { arrive, runAll, runner, sampledRows } = setup();
    // Two of the prompt's five rows (the Thinker's first piece), with the Thinker's names of its blocks (none whole
    // at 16 positions a block): the prefix cache has had its look.
    const blockPositions = spec.engine.prefixCache!.blockPositions;
    arrive({ ...rowsBody(2, 5), promptBlocks: { names: [], positions: blockPositions } } as ChunkBody);
    runAll();
    const fed = () => runner.steps.flat().map((it) => [it.numRows, it.sample]);
    expect(fed()).toEqual([[2, false]]);
    arrive(rowsBody(4, undefined, DIM, 2)); // the other three, and the first token's row
    runAll();
    expect(fed().slice(0, 2)).toEqual([
      [2, false],
      [4, true],
    ]);
    // The second piece fed rows 2..5: positions are not shifted by the split.
    expect(Array.from(runner.steps[1][0].rows.filter((_, i) => i % DIM === 0))).toEqual([2, 3, 4, 5]);
    expect(sampledRows().slice(0, 2)).toEqual([5, 5]);
  });

  it('with a prefix cache and no names from the Thinker, computes nothing until every prompt row is in', () => {
    const { arrive, runAll, runner } = setup();
    arrive(rowsBody(2, 5)); // its blocks are named by their rows: the cache looks once all five are in
    runAll();
    expect(runner.steps).toEqual([]);
    arrive(rowsBody(4, undefined, DIM, 2));
    runAll();
    expect(runner.steps[0].map((it) => [it.numRows, it.sample])).toEqual([[6, true]]);
  });

  it('the first chunk must say how many rows are prompt rows', async () => {
    const { arrive, adapter, ctx, runner, core } = setup();
    arrive(rowsBody(3));
    expect(adapter.to('code2wav#0')).toHaveLength(1);
    expect(adapter.to('code2wav#0')[0]).toMatchObject({
      final: true,
      finishReason: 'error',
      error: { code: 'CHORUS_ERR_CHUNK_SEQUENCE' },
    });
    expect(core.step()).toBe(false);
    expect(runner.steps).toEqual([]);
    await expect
      .poll(() => ctx.posted.find((m) => m.type === 'finished'))
      .toMatchObject({ requestId: 'r', finishReason: 'error', error: { code: 'CHORUS_ERR_CHUNK_SEQUENCE' } });
  });

  it('rows of the wrong width, or a body that is not rows, fail the request with FRAME_INVALID', () => {
    const a = setup();
    a.arrive(rowsBody(2, 1, DIM + 1));
    expect(a.adapter.to('code2wav#0').at(-1)).toMatchObject({
      final: true,
      finishReason: 'error',
      error: { code: 'CHORUS_ERR_FRAME_INVALID' },
    });
    expect(a.core.size).toBe(0);
    expect(a.core.step()).toBe(false);
    resetSeqs();
    const b = setup();
    b.arrive({ kind: 'text', tokenIds: [1] });
    const last = b.adapter.to('code2wav#0').at(-1);
    expect(last).toMatchObject({ final: true, finishReason: 'error', error: { code: 'CHORUS_ERR_FRAME_INVALID' } });
    expect(last?.error?.message).toMatch(/takes thinker rows, got text/);
    expect(b.core.size).toBe(0);
  });

  it('abort frees the runner state of the request, and what was sent for it goes too (let go everywhere)', () => {
    const { arrive, core, runner, ctx, adapter } = setup();
    arrive(rowsBody(2 + 1, 2));
    expect(core.step()).toBe(true);
    core.abort('r');
    expect(adapter.abandoned).toEqual(['r']);
    expect(runner.freed).toEqual(['r']);
    expect(core.size).toBe(0);
    expect(core.step()).toBe(false);
    expect(ctx.posted.find((m) => m.type === 'finished')).toMatchObject({ requestId: 'r', finishReason: 'cancelled' });
  });

  it('dropAll (main booted the instance anew) frees every request without a word, and later input is dropped', () => {
    const { arrive, core, runner, ctx, adapter } = setup();
    arrive(rowsBody(2 + 1, 2));
    expect(core.step()).toBe(true);
    const sent = adapter.to('code2wav#0').length;
    expect(core.dropAll()).toEqual(['r']);
    expect(runner.freed).toEqual(['r']);
    expect(adapter.cancelled).toEqual(['r']);
    expect(adapter.abandoned).toEqual([]); // main knows none of them: it drops nothing sent elsewhere
    expect(core.size).toBe(0);
    expect(ctx.posted.filter((m) => m.type === 'finished')).toEqual([]);
    arrive(rowsBody(2, undefined, DIM, 3)); // rows still in flight for it
    expect(core.step()).toBe(false);
    expect(adapter.to('code2wav#0').length).toBe(sent);
    expect(core.dropAll()).toEqual([]);
  });
});

describe('TalkerCore with paused requests', () => {
  it('does not count them as load: a new request gets the first chunk of the ladder for one request', () => {
    const adapter = new FakeAdapter();
    const ctx = stageContext(spec, adapter);
    const core = new TalkerCore(ctx, new FakeTalkerRunner());
    const add = (requestId: string, liveRequests: number) => {
      core.add(addMessage(requestId, {}, { liveRequests })); // main counts paused requests out too (Orchestrator)
      core.onArrivals([{ requestId, chunk: received(requestId, 'thinker', 'talker', rowsBody(3 + 20, 3)) }]);
    };
    for (let i = 0; i < 16; i++) {
      add(`paused${i}`, i + 1);
      core.pause(`paused${i}`); // their clients stopped reading
    }
    add('new', 1);
    core.onArrivals([{ requestId: 'new', chunk: received('new', 'thinker', 'talker', null, true) }]);
    while (core.step());
    const first = adapter.sent.find((c) => c.requestId === 'new' && c.body)!.body as CodecFramesBody;
    expect(first.numFrames - first.contextFrames).toBe(initialChunkFrames(ctx.chunkPolicy, 1));
    expect(adapter.sent.some((c) => c.requestId.startsWith('paused'))).toBe(false);
  });
});

describe('TalkerCore with a TTFP target', () => {
  /** Sizes of the chunks sent for request `id` (new frames, context not counted). */
  function firstChunkFrames(adapter: FakeAdapter, id: string): number {
    const first = adapter.sent.find((c) => c.requestId === id && c.body);
    const body = first!.body as CodecFramesBody;
    return body.numFrames - body.contextFrames;
  }

  it('sizes the first chunk from the target and the measured step costs; the load ladder without one', () => {
    const adapter = new FakeAdapter();
    const ctx = stageContext(spec, adapter);
    const core = new TalkerCore(ctx, new FakeTalkerRunner());
    const add = (requestId: string, targetMs: number | null, deadlineInMs: number) =>
      core.add(
        addMessage(requestId, {
          playback: {
            firstPacketDeadlineMs: Date.now() + deadlineInMs,
            ttfpTargetMs: targetMs,
            frameMs: 80,
            downstreamMs: 0,
          },
        }),
      );
    const run = (requestId: string) => {
      core.onArrivals([{ requestId, chunk: received(requestId, 'thinker', 'talker', rowsBody(3 + 60, 3)) }]);
      core.onArrivals([{ requestId, chunk: received(requestId, 'thinker', 'talker', null, true) }]);
      while (core.step());
    };
    add('ladder', null, 250); // no target: the dynamic initial chunk of the load ladder for one request
    run('ladder');
    expect(firstChunkFrames(adapter, 'ladder')).toBe(initialChunkFrames(ctx.chunkPolicy, 1));
    add('generous', 60_000, 60_000); // steps are measured now (the fake runner is fast): the largest chunk fits
    run('generous');
    expect(firstChunkFrames(adapter, 'generous')).toBe(25);
    add('overdue', 1, -10); // its deadline has passed: the smallest chunk, out as soon as possible
    run('overdue');
    expect(firstChunkFrames(adapter, 'overdue')).toBe(1);
  });

  it('a stretch without steps (an answer paced, held back or waiting for its text) is no frame time', () => {
    vi.useFakeTimers({ toFake: ['Date', 'performance'] });
    try {
      const adapter = new FakeAdapter();
      const ctx = stageContext(spec, adapter);
      const runner = new FakeTalkerRunner();
      runner.stepMs = 10; // one request: 10 ms a frame
      const core = new TalkerCore(ctx, runner);
      const add = (requestId: string, playback?: PlaybackPlan) =>
        core.add(addMessage(requestId, playback ? { playback } : {}));
      const arrive = (requestId: string, body: ChunkBody | null, final = false) =>
        core.onArrivals([{ requestId, chunk: received(requestId, 'thinker', 'talker', body, final) }]);
      add('long');
      arrive('long', rowsBody(3 + 3, 3)); // three text tokens: six frames
      while (core.step());
      vi.advanceTimersByTime(5_000); // its text comes five seconds later (paced to its speech): nothing to step
      arrive('long', rowsBody(3, undefined, DIM, 6));
      arrive('long', null, true);
      while (core.step());
      // A newcomer with 600 ms to its first packet: at 10 ms a frame the largest first chunk fits. With the five
      // seconds counted into a frame interval it looked hundreds of ms a frame, and only the smallest chunk did.
      add('next', { firstPacketDeadlineMs: Date.now() + 600, ttfpTargetMs: 600, frameMs: 80, downstreamMs: 0 });
      arrive('next', rowsBody(3 + 30, 3));
      arrive('next', null, true);
      while (core.step());
      expect(firstChunkFrames(adapter, 'next')).toBe(25);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("TalkerCore's speaking slices", () => {
  afterEach(() => vi.useRealTimers());

  /**
   * Eight answers, each admitted by main `admittedAgoMs` before its add is read here and its prompt rows sent
   * `rowsAfterMs` after that, each prefilled alone at 3 ms of CPU; a decode step costs 10 ms and 1 a row (eight rows
   * 18 ms, slices of four 14 each: not about free). The batch sizes of the last steps, once every answer has spoken
   * for a second and its listener is far ahead.
   */
  function settledBatches(admittedAgoMs: number, rowsAfterMs: number, duplicateAdds = false): number[] {
    vi.useFakeTimers({ toFake: ['Date', 'performance'], now: 1_000_000 });
    const adapter = new FakeAdapter();
    let cpuMs = 0;
    const runner = new (class extends FakeTalkerRunner {
      override execute(items: readonly TalkerBatchItem[]): TalkerStepOutput[] {
        cpuMs += items.some((it) => it.numRows > 1) ? 3 * items.length : 10 + items.length;
        return super.execute(items);
      }
    })();
    runner.stepMs = 10;
    const core = new TalkerCore({ ...stageContext(spec, adapter), cpuClockMs: () => cpuMs }, runner);
    const spoke = (id: string) => adapter.sent.some((c) => c.requestId === id && c.body);
    for (let i = 0; i < 8; i++) {
      const id = `a${i}`;
      const playback = { firstPacketDeadlineMs: Date.now() + 200, ttfpTargetMs: null, frameMs: 80, downstreamMs: 0 };
      core.add(addMessage(id, { playback }, { admittedAtMs: Date.now() - admittedAgoMs }));
      vi.advanceTimersByTime(rowsAfterMs); // the Thinker's prefill
      core.onArrivals([{ requestId: id, chunk: received(id, 'thinker', 'talker', rowsBody(3 + 100, 3)) }]);
      if (duplicateAdds) core.add(addMessage(id, { playback })); // ignored: its next input is no newcomer's
      core.onArrivals([{ requestId: id, chunk: received(id, 'thinker', 'talker', null, true) }]);
      while (!spoke(id)) core.step();
    }
    for (let i = 0; i < 60; i++) core.step();
    vi.advanceTimersByTime(FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    const before = runner.steps.length;
    for (let i = 0; i < SLICE_RESIZE_STEPS + 20; i++) core.step();
    expect(runner.steps.length - before).toBe(SLICE_RESIZE_STEPS + 20); // nothing ended or waited meanwhile
    return runner.steps.slice(-10).map((s) => s.length);
  }

  it("slices a step that would last beyond a newcomer's prefill and the wait for its rows, not one within them", () => {
    // Rows as soon as the add: a step of eight (18 ms) is over a newcomer's 3 ms, and runs in slices.
    expect(Math.max(...settledBatches(0, 0))).toBeLessThan(8);
    // Rows 20 ms after the add: a step in progress at the add ends before they come; the eight run together.
    expect(settledBatches(0, 20)).toEqual(Array(10).fill(8));
    // The same when the add was read late (behind a step of 10 ms) and the rows came at once: from admission.
    expect(settledBatches(20, 0)).toEqual(Array(10).fill(8));
    // A duplicate add (ignored) measures no wait of its own: the input after it is not a newcomer's.
    expect(settledBatches(0, 20, true)).toEqual(Array(10).fill(8));
  });
});
