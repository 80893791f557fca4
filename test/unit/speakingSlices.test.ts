/**
 * Speaking slices (issue 41 item 5): a step takes at most `size` of the answers that may wait (speaking for a while,
 * listener far ahead), in stable turns, so that a newcomer waits for a short step in progress, not one of sixteen
 * (src/sched/SpeakingSlices.ts); the Thinker applies it to its plans (chunk_policy.speaking_slice).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FIRST_AUDIO_FIRST_DEFAULTS } from '../../src/sched/FirstAudioFirst.ts';
import { SLICE_MIN_STEP_MS, SpeakingSlices } from '../../src/sched/SpeakingSlices.ts';
import type { ThinkerBatchItem, ThinkerStepOutput } from '../../stages/types.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

/** A decode row's CPU at which any step of more than one row is worth slicing (ms). */
const COSTLY = SLICE_MIN_STEP_MS;
const ids = (n: number, prefix = 'a') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('SpeakingSlices', () => {
  it('runs sixteen waiting answers four at a time, in the same groups turn after turn', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(16);
    const groups = Array.from({ length: 8 }, () => [...slices.keep(all, () => true, COSTLY)!]);
    expect(groups.slice(0, 4)).toEqual([all.slice(0, 4), all.slice(4, 8), all.slice(8, 12), all.slice(12, 16)]);
    expect(groups.slice(4)).toEqual(groups.slice(0, 4)); // stable: each group's KV is fed back as is
  });

  it('always keeps the requests that may not wait, and slices nothing when few may', () => {
    const slices = new SpeakingSlices(2);
    const planned = ['new', ...ids(5)];
    const kept = slices.keep(planned, (id) => id !== 'new', COSTLY)!;
    expect(kept).toEqual(new Set(['new', 'a0', 'a1']));
    expect(slices.keep(planned, (id) => id !== 'new', COSTLY)).toEqual(new Set(['new', 'a2', 'a3']));
    expect(slices.keep(['new', 'a0', 'a1'], (id) => id !== 'new', COSTLY)).toBeNull();
    expect(slices.keep(planned, () => false, COSTLY)).toBeNull();
  });

  it('keeps ten answers in three fixed groups, not a rotation that changes every batch (each group KV as is)', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(10);
    const groups = Array.from({ length: 9 }, () => [...slices.keep(all, () => true, COSTLY)!]);
    expect(groups.slice(0, 3)).toEqual([all.slice(0, 4), all.slice(4, 8), all.slice(8, 10)]);
    expect(groups.slice(3, 6)).toEqual(groups.slice(0, 3));
    expect(groups.slice(6, 9)).toEqual(groups.slice(0, 3));
  });

  it('runs a group without a member that is not in the plan, and does not move the others', () => {
    const slices = new SpeakingSlices(2);
    const all = ids(6);
    for (let i = 0; i < 3; i++) slices.keep(all, () => true, COSTLY); // {a0, a1}, {a2, a3}, {a4, a5}
    const withoutA2 = all.filter((id) => id !== 'a2'); // a2 waits for its input this step
    expect(slices.keep(withoutA2, () => true, COSTLY)).toEqual(new Set(['a0', 'a1']));
    expect(slices.keep(withoutA2, () => true, COSTLY)).toEqual(new Set(['a3']));
    expect(slices.keep(all, () => true, COSTLY)).toEqual(new Set(['a4', 'a5']));
    expect(slices.keep(all, () => true, COSTLY)).toEqual(new Set(['a0', 'a1']));
  });

  it('puts a newly waiting answer into a group with room, and dissolves a group whose members fit elsewhere', () => {
    const slices = new SpeakingSlices(2);
    slices.keep(ids(4), () => true, COSTLY); // {a0, a1}, {a2, a3}
    slices.removed('a0');
    // b0 joins a1's group (the one with room), and the turns stay two.
    expect(slices.keep([...ids(4).slice(1), 'b0'], () => true, COSTLY)).toEqual(new Set(['a2', 'a3']));
    expect(slices.keep([...ids(4).slice(1), 'b0'], () => true, COSTLY)).toEqual(new Set(['a1', 'b0']));
    slices.removed('a2');
    slices.removed('b0');
    // {a1} and {a3} fit one group of two: three waiting answers run in two turns, {a1, a3} and a new group for c0.
    const planned = ['a1', 'a3', 'c0'];
    const kept = [
      slices.keep(planned, () => true, COSTLY),
      slices.keep(planned, () => true, COSTLY),
      slices.keep(planned, () => true, COSTLY),
    ];
    expect(kept).toEqual([new Set(['c0']), new Set(['a1', 'a3']), new Set(['c0'])]);
  });

  it('slices only a step that would cost SLICE_MIN_STEP_MS or more, and nothing before a decode was measured', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(10);
    const rowMs = SLICE_MIN_STEP_MS / 10;
    expect(slices.keep(all, () => true, rowMs * 0.99)).toBeNull(); // ten rows under the bound: one step
    expect(slices.keep(all, () => true, null)).toBeNull();
    expect(slices.keep(all, () => true, rowMs)).toEqual(new Set(all.slice(0, 4)));
    expect(slices.keep(all.slice(0, 8), () => true, rowMs)).toBeNull(); // eight rows of the same cost: under it
  });

  it('refuses a size below one', () => {
    expect(() => new SpeakingSlices(0)).toThrow(RangeError);
  });
});

describe('the Thinker slices its speaking answers (chunk_policy.speaking_slice)', () => {
  const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;
  afterEach(() => vi.useRealTimers());

  /** A runner that records each step's batch, and spends `rowMs` of CPU a row (the cost slicing is decided on). */
  class BatchRunner extends KvLengthRunner {
    readonly batches: string[][] = [];
    constructor(private readonly rowMs: number) {
      super();
    }
    override execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
      this.batches.push(items.map((it) => it.seqId));
      const from = process.cpuUsage();
      const spent = () => {
        const used = process.cpuUsage(from);
        return (used.user + used.system) / 1000;
      };
      while (spent() < this.rowMs * items.length); // a model's CPU, not a wait
      return super.execute(items);
    }
  }

  /** A decode row's CPU at which sixteen rows cost more than SLICE_MIN_STEP_MS and four less (ms). */
  const ROW_MS = (SLICE_MIN_STEP_MS / 16) * 1.25;

  function thinker(n: number, speakingSlice: number | null, rowMs = ROW_MS) {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const runner = new BatchRunner(rowMs);
    const ctx = stageContext(spec, new FakeAdapter());
    const core = new ThinkerCore({ ...ctx, chunkPolicy: { ...ctx.chunkPolicy, speakingSlice } }, runner);
    const add = (requestId: string) =>
      core.add({
        type: 'add',
        requestId,
        sampling: { ...spec.defaultSamplingParams, maxTokens: 1000, ignoreEos: true },
        downstream: [
          { instance: 'main', stageId: 'main' },
          { instance: 'talker#0', stageId: 'talker' },
        ],
        upstreams: [],
        args: { promptTokenIds: [1, 2, 3] },
        firstChunkDeadline: Date.now() + 30_000,
      });
    for (const id of ids(n)) add(id);
    core.step(); // the prompts
    for (const id of ids(n)) core.onKindMessage(id, { type: 'first_audio' });
    return { core, runner, add };
  }

  it('steps sixteen settled speaking answers four at a time; one newcomer runs at once', () => {
    const { core, runner, add } = thinker(16, 4);
    core.step(); // speaking for less than a second: all sixteen together
    expect(runner.batches.at(-1)).toHaveLength(16);
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 8; i++) core.step();
    const sliced = runner.batches.slice(-8);
    expect(sliced.map((b) => b.length)).toEqual(Array(8).fill(4));
    expect(new Set(sliced.slice(0, 4).flat())).toEqual(new Set(ids(16))); // each once a turn of four steps
    add('new');
    core.step();
    expect(runner.batches.at(-1)).toEqual(['new']); // its prefill alone (prefill first), the others held back
  });

  it('steps them all together while a step of them costs less than SLICE_MIN_STEP_MS', () => {
    const { core, runner } = thinker(16, 4, 0);
    core.step(); // a decode step measures the cost of a row
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 3; i++) core.step();
    expect(runner.batches.slice(-3).map((b) => b.length)).toEqual([16, 16, 16]);
  });

  it('steps them all together with speaking_slice null', () => {
    const { core, runner } = thinker(16, null);
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    core.step();
    expect(runner.batches.at(-1)).toHaveLength(16);
  });
});
