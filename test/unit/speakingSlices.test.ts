/**
 * Speaking slices (issue 41 item 5): a step takes at most `size` of the answers that may wait (speaking for a while,
 * listener far ahead), in stable turns, so that a newcomer waits for a short step in progress, not one of sixteen
 * (src/sched/SpeakingSlices.ts); the Thinker applies it to its plans (chunk_policy.speaking_slice).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FIRST_AUDIO_FIRST_DEFAULTS } from '../../src/sched/FirstAudioFirst.ts';
import {
  SLICE_FLOOR_MS,
  SLICE_FREE_OVERHEAD,
  SLICE_KEEP_SHARE,
  SLICE_MIN_STEP_MS,
  SLICE_RESIZE_STEPS,
  SLICE_SIZE_MARGIN,
  SpeakingSlices,
} from '../../src/sched/SpeakingSlices.ts';
import type { ThinkerBatchItem, ThinkerStepOutput } from '../../stages/types.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

/** A decode step's CPU by its rows at which any step of more than one row is worth slicing (ms). */
const COSTLY = (rows: number) => rows * SLICE_MIN_STEP_MS;
const ids = (n: number, prefix = 'a') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('SpeakingSlices', () => {
  it('runs sixteen waiting answers four at a time, in the same groups turn after turn', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(16);
    const groups = Array.from({ length: 8 }, () => [...slices.keep(all, () => true, COSTLY)!]);
    expect(groups.slice(0, 4)).toEqual([all.slice(0, 4), all.slice(4, 8), all.slice(8, 12), all.slice(12, 16)]);
    expect(groups.slice(4)).toEqual(groups.slice(0, 4)); // stable: each group's KV is fed back as is
  });

  it('runs the requests that may not wait every other step, the groups between; slices nothing when few may', () => {
    // Beside each group, one that may not wait would make every step a new batch, its KV and the group's repacked.
    const slices = new SpeakingSlices(2);
    const planned = ['new', ...ids(5)];
    const kept = Array.from({ length: 6 }, () => [...slices.keep(planned, (id) => id !== 'new', COSTLY)!]);
    expect(kept).toEqual([['new'], ['a0', 'a1'], ['new'], ['a2', 'a3'], ['new'], ['a4']]);
    expect(slices.keep(ids(5), () => true, COSTLY)).toEqual(new Set(['a0', 'a1'])); // none that may not wait: groups
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

  it('slices a step of SLICE_MIN_STEP_MS or more whatever its slices cost, nothing before a decode is measured', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(10);
    // A fixed cost a step that makes three slices cost over twice the step of ten: not free, only the bound slices.
    const fixedAnd = (total: number) => (rows: number) => total * 0.6 + (total * 0.4 * rows) / 10;
    expect(slices.keep(all, () => true, fixedAnd(SLICE_MIN_STEP_MS * 0.99))).toBeNull(); // ten rows under the bound
    const unknown = () => null;
    expect(slices.keep(all, () => true, unknown)).toBeNull();
    expect(slices.keep(all, () => true, fixedAnd(SLICE_MIN_STEP_MS))).toEqual(new Set(all.slice(0, 4)));
  });

  it('slices a shorter step when its slices cost at most SLICE_FREE_OVERHEAD more, down to SLICE_FLOOR_MS', () => {
    const all = ids(16);
    // Rows that cost the same in any step (no fixed cost): four slices of four cost what the step of sixteen does.
    const perRow = (ms: number) => (rows: number) => rows * ms;
    const rowMs = (SLICE_MIN_STEP_MS / 16) * 0.5;
    expect(new SpeakingSlices(4).keep(all, () => true, perRow(rowMs))).toEqual(new Set(all.slice(0, 4)));
    expect(new SpeakingSlices(4).keep(all, () => true, perRow((SLICE_FLOOR_MS / 16) * 0.99))).toBeNull();
    // Slices that cost just over SLICE_FREE_OVERHEAD more: a fixed cost f a step, 4 (f + 4r) > 1.25 (f + 16r).
    const withFixed = (fixedMs: number) => (rows: number) => fixedMs + rows * rowMs;
    const over = (((1 + SLICE_FREE_OVERHEAD) * 16 * rowMs - 16 * rowMs) / (4 - 1 - SLICE_FREE_OVERHEAD)) * 1.05;
    expect(new SpeakingSlices(4).keep(all, () => true, withFixed(over))).toBeNull();
    expect(new SpeakingSlices(4).keep(all, () => true, withFixed(over * 0.9))).not.toBeNull();
    // Once on, they stay on at that cost (SLICE_KEEP_SHARE: up to twice the free overhead).
    const on = new SpeakingSlices(4);
    expect(on.keep(all, () => true, perRow(rowMs))).not.toBeNull();
    expect(on.keep(all, () => true, withFixed(over))).not.toBeNull();
  });

  it('stays sliced down to SLICE_KEEP_SHARE of the bound, and starts again only at the bound', () => {
    const slices = new SpeakingSlices(4);
    const all = ids(16);
    const costing = (ms: number) => () => ms;
    const sliced = (ms: number) => slices.keep(all, () => true, costing(ms)) !== null;
    expect(sliced(SLICE_MIN_STEP_MS * 0.9)).toBe(false);
    expect(sliced(SLICE_MIN_STEP_MS)).toBe(true);
    expect(sliced(SLICE_MIN_STEP_MS * 0.9)).toBe(true);
    expect(sliced(SLICE_MIN_STEP_MS * SLICE_KEEP_SHARE)).toBe(true);
    expect(sliced(SLICE_MIN_STEP_MS * SLICE_KEEP_SHARE * 0.99)).toBe(false);
    expect(sliced(SLICE_MIN_STEP_MS * 0.9)).toBe(false);
  });

  it("once a newcomer's prefill is measured, slices a step over its cost, as many a slice as a step takes", () => {
    const all = ids(16);
    // 2 ms a step and 2 a row: a slice of two costs 6 ms, of three 8, over a 6 ms prefill and SLICE_SIZE_MARGIN.
    const cost = (rows: number) => 2 + 2 * rows;
    expect(cost(3)).toBeGreaterThan(6 * (1 + SLICE_SIZE_MARGIN));
    const slices = new SpeakingSlices(4);
    const asked = SLICE_RESIZE_STEPS - 1; // steps that ask for two before the one that takes it
    const kept = Array.from({ length: asked + 16 }, () => [...slices.keep(all, () => true, cost, 6)!]);
    expect(slices.sliceSize).toBe(2);
    expect(kept.splice(0, asked).map((k) => k.length)).toEqual(Array(asked).fill(4));
    expect(kept.map((k) => k.length)).toEqual(Array(16).fill(2));
    expect(new Set(kept.slice(0, 8).flat())).toEqual(new Set(all)); // each once a turn of eight steps
    expect(kept.slice(8)).toEqual(kept.slice(0, 8)); // in the same groups
    // A step of sixteen under SLICE_MIN_STEP_MS, its slices far from free: the bound is the newcomer's prefill.
    const cheap = (rows: number) => 3 + 0.3 * rows;
    expect(cheap(16)).toBeLessThan(SLICE_MIN_STEP_MS);
    expect(new SpeakingSlices(4).keep(all, () => true, cheap)).toBeNull();
    expect(new SpeakingSlices(4).keep(all, () => true, cheap, 5)).toEqual(new Set(all.slice(0, 4)));
  });

  it("moves the slices' size only past SLICE_SIZE_MARGIN for SLICE_RESIZE_STEPS steps, and regroups them then", () => {
    const all = ids(16);
    const cost = (rows: number) => 2 + 2 * rows; // rows: 1 -> 4 ms, 2 -> 6, 3 -> 8, 4 -> 10
    const slices = new SpeakingSlices(4);
    for (let i = 0; i < 4; i++)
      slices.keep(
        all,
        () => true,
        (rows) => rows * SLICE_MIN_STEP_MS,
      ); // four groups of four
    expect(slices.sliceSize).toBe(4);
    const turn = (newcomerMs: number, steps: number) =>
      Array.from({ length: steps }, () => [...slices.keep(all, () => true, cost, newcomerMs)!]);
    // Asked for by one step in two: no move.
    for (let i = 0; i < SLICE_RESIZE_STEPS; i++) turn(i % 2 ? 6 : 9, 1);
    expect(slices.sliceSize).toBe(4);
    turn(6, SLICE_RESIZE_STEPS);
    const shrunk = turn(6, 8);
    expect(slices.sliceSize).toBe(2);
    expect(shrunk.map((k) => k.length)).toEqual(Array(8).fill(2));
    expect(new Set(shrunk.flat())).toEqual(new Set(all));
    // 7 ms: three rows (8 ms) are within the margin over it but not under it, two over neither: the size stays.
    expect(turn(7, SLICE_RESIZE_STEPS + 8).map((k) => k.length)).toEqual(Array(SLICE_RESIZE_STEPS + 8).fill(2));
    expect(slices.sliceSize).toBe(2);
    // 11 ms: three rows fit under it with the margin, four do not: slices of three (five groups and one of one).
    turn(11, SLICE_RESIZE_STEPS);
    const grown = turn(11, 12);
    expect(slices.sliceSize).toBe(3);
    expect(Math.max(...grown.map((k) => k.length))).toBe(3);
    expect(new Set(grown.slice(0, 6).flat())).toEqual(new Set(all));
    expect(grown.slice(6)).toEqual(grown.slice(0, 6));
  });

  it('refuses a size below one', () => {
    expect(() => new SpeakingSlices(0)).toThrow(RangeError);
  });
});

describe('the Thinker slices its speaking answers (chunk_policy.speaking_slice)', () => {
  const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;
  afterEach(() => vi.useRealTimers());

  /**
   * A model that records each step's batch and advances the stage's CPU clock (StageContext.cpuClockMs, what slicing
   * reads) by `decodeMs(rows, step)` a decode step and `prefillMs(rows, positions)` a step of prompts (by default
   * nothing: no newcomer's prefill measured, the default bound and size).
   */
  class BatchRunner extends KvLengthRunner {
    readonly batches: string[][] = [];
    cpuMs = 0;
    constructor(
      private readonly decodeMs: (rows: number, step: number) => number,
      private readonly prefillMs: (rows: number, positions: number) => number,
    ) {
      super();
    }
    override execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
      this.batches.push(items.map((it) => it.seqId));
      const prefill = items.some((it) => it.numTokens > 1);
      const positions = items.reduce((n, it) => n + it.numTokens, 0);
      this.cpuMs += prefill
        ? this.prefillMs(items.length, positions)
        : this.decodeMs(items.length, this.batches.length);
      return super.execute(items);
    }
  }

  /** A decode row's CPU at which sixteen rows cost more than SLICE_MIN_STEP_MS and four less (ms). */
  const ROW_MS = (SLICE_MIN_STEP_MS / 16) * 1.25;

  function thinker(
    n: number,
    speakingSlice: number | null,
    stepMs: number | ((rows: number, step: number) => number) = ROW_MS,
    prefillMs: (rows: number, positions: number) => number = () => 0,
    prompt: { positions: number; stepPositions: number; prefillFirst?: boolean } = {
      positions: 3,
      stepPositions: spec.engine.maxNumBatchedTokens,
    },
  ) {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const runner = new BatchRunner(typeof stepMs === 'number' ? (rows) => rows * stepMs : stepMs, prefillMs);
    const engine = { ...spec.engine, maxNumBatchedTokens: prompt.stepPositions, prefillFirst: prompt.prefillFirst };
    const ctx = stageContext({ ...spec, engine }, new FakeAdapter());
    const chunkPolicy = { ...ctx.chunkPolicy, speakingSlice };
    const core = new ThinkerCore({ ...ctx, chunkPolicy, cpuClockMs: () => runner.cpuMs }, runner);
    const add = (requestId: string, positions = prompt.positions, firstToken = 1) =>
      core.add({
        type: 'add',
        requestId,
        sampling: { ...spec.defaultSamplingParams, maxTokens: 1000, ignoreEos: true },
        downstream: [
          { instance: 'main', stageId: 'main' },
          { instance: 'talker#0', stageId: 'talker' },
        ],
        upstreams: [],
        args: { promptTokenIds: Array.from({ length: positions }, (_, i) => firstToken + i) },
        firstChunkDeadline: Date.now() + 30_000,
      });
    for (const id of ids(n)) add(id);
    const prefillSteps = Math.ceil((n * prompt.positions) / prompt.stepPositions);
    for (let i = 0; i < prefillSteps; i++) core.step(); // the prompts
    for (const id of ids(n)) core.onKindMessage(id, { type: 'first_audio' });
    return { core, runner, add };
  }

  /** The batch sizes of sixteen answers' steps at this cost: one decode, then 40 steps once they have settled. */
  function settledSteps(stepMs: (rows: number, step: number) => number): number[] {
    const { core, runner } = thinker(16, 4, stepMs);
    core.step();
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 40; i++) core.step();
    return runner.batches.map((b) => b.length);
  }

  it('steps sixteen settled speaking answers four at a time; one newcomer runs at once', () => {
    const { core, runner, add } = thinker(16, 4);
    for (let i = 0; i < 3; i++) core.step(); // speaking for less than a second: all sixteen together
    expect(runner.batches.slice(-3).map((b) => b.length)).toEqual([16, 16, 16]);
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 8; i++) core.step();
    const sliced = runner.batches.slice(-8);
    expect(sliced.map((b) => b.length)).toEqual(Array(8).fill(4));
    expect(new Set(sliced.slice(0, 4).flat())).toEqual(new Set(ids(16))); // each once a turn of four steps
    add('new');
    core.step();
    expect(runner.batches.at(-1)).toEqual(['new']); // its prefill alone (prefill first), the others held back
  });

  it("runs a newcomer's first second of speech in steps of its own, so that no group's batch changes", () => {
    const { core, runner, add } = thinker(15, 4); // the newcomer takes the sixteenth seat: no seat turns
    core.step();
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 8; i++) core.step();
    const groups = runner.batches.slice(-4).map((b) => b.join());
    expect(groups.map((g) => g.split(',').length).sort()).toEqual([3, 4, 4, 4]);
    add('new');
    core.step(); // its prefill, alone
    core.onKindMessage('new', { type: 'first_audio' });
    const from = runner.batches.length;
    for (let i = 0; i < 8; i++) core.step();
    const steps = runner.batches.slice(from).map((b) => b.join());
    expect(steps.filter((_, i) => i % 2 === 0)).toEqual(Array(4).fill('new'));
    const between = steps.filter((_, i) => i % 2 === 1);
    expect(new Set(between)).toEqual(new Set(groups)); // each group in its turn, as before: its KV fed back as is
  });

  it('seventeen answers on sixteen seats run in four groups of four: the one seated fills the yielded place', () => {
    // Seat turns on (8 steps, the default): one answer always waits for a seat. Kept in its group while it waited, a
    // yielded answer made the seventeenth a fifth group, a step of one row in every five.
    const { core, runner } = thinker(17, 4);
    // The seventeenth's prefill takes a seat, then decodes of sixteen (their cost measured); all speak for under 1 s.
    for (let i = 0; i < 4; i++) core.step();
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    const from = runner.batches.length;
    for (let i = 0; i < 100; i++) core.step();
    const sliced = runner.batches.slice(from);
    expect(new Set(sliced.flat()).size).toBe(17); // seats changed hands
    expect(sliced.map((b) => b.length)).toEqual(Array(100).fill(4));
  });

  it('steps them all together while a step of them costs less than SLICE_MIN_STEP_MS', () => {
    const { core, runner } = thinker(16, 4, 0);
    core.step(); // a decode step measures the cost of a row
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 3; i++) core.step();
    expect(runner.batches.slice(-3).map((b) => b.length)).toEqual([16, 16, 16]);
  });

  it('prices a step of sixteen by its own cost, not by a slow step or by the cost a row of a slice', () => {
    // A step costs a fixed 6 ms and 0.4 a row: sixteen rows 12.4 ms, under the bound, where a slice of four costs 7.6
    // (1.9 a row: four times that is 30). The running mean of the CPU a row switched slices on after one step slowed
    // by 40 ms (a collection), and then read the slices' rows and never switched them off (bench/NOTES.md).
    const cost = (slowStep: number, rowMs: (step: number) => number) => (rows: number, step: number) =>
      6 + rows * rowMs(step) + (step === slowStep ? 40 : 0);
    const { core, runner } = thinker(
      16,
      4,
      cost(6, () => 0.4),
    );
    for (let i = 0; i < 4; i++) core.step(); // decodes of sixteen, the fit's one size
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < 12; i++) core.step(); // the second of them 40 ms slower
    // Slices look free while one size has run (no fixed cost fitted yet): tried for the few steps the fit needs,
    // then priced at 30 ms against 12.4 and left for good.
    const sizes = runner.batches.slice(-12).map((b) => b.length);
    expect(sizes.filter((n) => n === 4).length).toBeLessThanOrEqual(4 * 3);
    expect(sizes.slice(-6)).toEqual(Array(6).fill(16));
  });

  it('ends the slices when a step of all of them would cost less than SLICE_KEEP_SHARE of the bound', () => {
    // 1.2 ms a row for twelve steps (sixteen rows: 25 ms, sliced), then 0.1 (7.6 ms): once the steps of sixteen are
    // out of the fit's window, the slices of four (6.4 ms) price a step of sixteen at the fixed cost fitted before
    // plus sixteen times what a row of them costs beyond it.
    expect(6 + 16 * 0.1).toBeLessThan(SLICE_MIN_STEP_MS * SLICE_KEEP_SHARE);
    const sizes = settledSteps((rows, step) => 6 + rows * (step <= 12 ? 1.2 : 0.1));
    expect(sizes.slice(2, 12)).toContain(4); // sliced while a step of sixteen cost 25 ms
    expect(sizes.slice(-4)).toEqual([16, 16, 16, 16]);
  });

  it('keeps slicing while a step of all of them would cost between SLICE_KEEP_SHARE of the bound and the bound', () => {
    // Sliced at 1.2 ms a row, then 0.4 (sixteen rows: 12.4 ms, under the bound but over its share): switching back
    // would repack all sixteen caches, and the steps of sixteen would price the slices on again.
    expect(6 + 16 * 0.4).toBeLessThan(SLICE_MIN_STEP_MS);
    expect(6 + 16 * 0.4).toBeGreaterThan(SLICE_MIN_STEP_MS * SLICE_KEEP_SHARE);
    const sizes = settledSteps((rows, step) => 6 + rows * (step <= 12 ? 1.2 : 0.4));
    expect(sizes.slice(2, 12)).toContain(4);
    expect(sizes.slice(12)).toEqual(Array(sizes.length - 12).fill(4));
  });

  it("slices by what a new prompt's prefill costs the stage: its share of a step of them", () => {
    // A prompt's prefill costs 6 ms of CPU (thirteen in one step, 78 ms), a decode step 4 ms and 1 a row: thirteen
    // rows 17 ms (sliced at the default bound as well), four 8 (over 6 x (1 + SLICE_SIZE_MARGIN)), three 7.
    const { core, runner, add } = thinker(
      13,
      4,
      (rows) => 4 + rows,
      (rows) => 6 * rows,
    );
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    // Three decodes of thirteen price their step, slices of four then price a slice, and the size follows.
    for (let i = 0; i < SLICE_RESIZE_STEPS + 20; i++) core.step();
    const lengths = (batches: string[][]) => batches.map((b) => b.length).sort((x, y) => x - y);
    const sliced = runner.batches.slice(-10);
    // Thirteen answers in four groups of three and one of one, each once a turn of five steps, in the same groups.
    expect(lengths(sliced.slice(0, 5))).toEqual([1, 3, 3, 3, 3]);
    expect(new Set(sliced.slice(0, 5).flat())).toEqual(new Set(ids(13)));
    expect(sliced.slice(5)).toEqual(sliced.slice(0, 5));
    // Without that measure (no CPU clock moved by a prefill), the default's four.
    const unpriced = thinker(13, 4, (rows) => 4 + rows);
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < SLICE_RESIZE_STEPS + 20; i++) unpriced.core.step();
    expect(lengths(unpriced.runner.batches.slice(-4))).toEqual([1, 4, 4, 4]);
    // A newcomer then runs at once, alone.
    add('new');
    core.step();
    expect(runner.batches.at(-1)).toEqual(['new']);
  });

  it("prices a newcomer's prefill whole when the step budget cuts its prompt in pieces", () => {
    // Steps of 10 positions, 1 ms of CPU a position: five newcomers' 40-position prompts, each prefilled alone in four
    // pieces, cost the stage 40 ms each, a piece 10. A decode step costs 6 ms and 1 a row: nine answers' step 15,
    // under a newcomer's whole prefill (its half, where slices once on end), over a piece.
    const { core, runner, add } = thinker(
      0,
      4,
      (rows) => 6 + rows,
      (_rows, positions) => positions,
      { positions: 1, stepPositions: 10, prefillFirst: false },
    );
    for (let i = 0; i < 5; i++) {
      const id = `new${i}`;
      add(id, 40, 100 + 40 * i); // a prompt of its own: none of it from another's prefix cache
      const before = runner.batches.length;
      for (let k = 0; k < 5; k++) core.step();
      expect(runner.batches.slice(before)).toEqual(Array(5).fill([id])); // four pieces and its first decode
      if (i < 4) core.abort(id);
    }
    // Eight answers more, their prompts beside the last newcomer's decodes (no prefill of their own to price).
    for (const id of ids(8)) add(id);
    core.step();
    expect(runner.batches.at(-1)).toHaveLength(9);
    for (const id of [...ids(8), 'new4']) core.onKindMessage(id, { type: 'first_audio' });
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    for (let i = 0; i < SLICE_RESIZE_STEPS + 20; i++) core.step();
    expect(runner.batches.slice(-10).map((b) => b.length)).toEqual(Array(10).fill(9));
  });

  it('steps them all together with speaking_slice null', () => {
    const { core, runner } = thinker(16, null);
    vi.setSystemTime(Date.now() + FIRST_AUDIO_FIRST_DEFAULTS.settleMs);
    core.step();
    expect(runner.batches.at(-1)).toHaveLength(16);
  });
});
