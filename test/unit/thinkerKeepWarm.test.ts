/**
 * The Thinker (the entry stage: it computes at its add) warms no model on an add; while it holds no request it keeps
 * its weights warm instead (IdleWarmth.ts): a dummy step each period after its last step, for StageContext.keepWarmMs,
 * none while a request is live, none when it waited for a core meanwhile (the cores have other work), none at all
 * without keepWarmMs. Driven through ThinkerCore on a fake runner, its clocks
 * faked (performance.now, Date.now).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  KEEP_WARM_MAX_CORE_WAIT_MS,
  KEEP_WARM_MAX_STEP_MS,
  KEEP_WARM_MIN_PERIOD_MS,
  KEEP_WARM_TRIAL_STEPS,
} from '../../src/worker/IdleWarmth.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner, textAdd } from '../helpers/fakeThinkerRunner.ts';

const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;

function thinker(keepWarmMs?: number, runner = new KvLengthRunner()) {
  const ctx = { ...stageContext(spec, new FakeAdapter()), ...(keepWarmMs !== undefined ? { keepWarmMs } : {}) };
  const core = new ThinkerCore(ctx, runner);
  const answer = async (requestId: string) => {
    add(requestId);
    while (core.step());
    // Its final chunk's send settles on the event loop (not on the faked clocks, which stand still meanwhile).
    while (core.size > 0) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const add = (requestId: string) => core.add(textAdd(spec, requestId, [1, 2, 3]));
  return { core, runner, answer, add };
}

/** Keep-warm steps run while the fake clock moves on by `ms`, a millisecond at a time, as the idle loop would. */
function idleFor(core: ThinkerCore, ms: number): number {
  let ran = 0;
  for (let t = 0; t < ms; t++) {
    vi.advanceTimersByTime(1);
    if (core.keepWarm()) ran++;
  }
  return ran;
}

describe('the Thinker keeps its weights warm while idle', () => {
  beforeEach(() => {
    resetSeqs();
    vi.useFakeTimers({ toFake: ['performance', 'Date'] });
  });
  afterEach(() => vi.useRealTimers());

  it('a dummy step each period after its last step, for keepWarmMs, and none on an add', async () => {
    const { core, runner, answer } = thinker(100);
    expect(idleFor(core, 50)).toBe(0); // never stepped: the load's warm-up ran last
    await answer('r');
    expect(runner.warms).toBe(0); // the add warmed nothing: its prefill ran at once
    const stepsBefore = runner.steps.length;
    expect(core.keepWarmWakeAtMs()).toBe(Date.now() + KEEP_WARM_MIN_PERIOD_MS);
    expect(idleFor(core, 300)).toBe(Math.floor(100 / KEEP_WARM_MIN_PERIOD_MS));
    expect(runner.warms).toBe(Math.floor(100 / KEEP_WARM_MIN_PERIOD_MS));
    expect(runner.steps.length).toBe(stepsBefore); // no request's step among them
    expect(core.keepWarmWakeAtMs()).toBeNull(); // the window ended: the loop sleeps until something arrives
    await answer('again'); // a request's steps open a new window
    expect(idleFor(core, KEEP_WARM_MIN_PERIOD_MS)).toBe(1);
  });

  it('none once its first warm steps all took over KEEP_WARM_MAX_STEP_MS (a model too big to keep warm)', async () => {
    class SlowToWarm extends KvLengthRunner {
      override warm(): void {
        super.warm();
        vi.advanceTimersByTime(KEEP_WARM_MAX_STEP_MS + 1); // the step's own time, on the faked clock
      }
    }
    const { core, runner, answer } = thinker(10_000, new SlowToWarm());
    await answer('r');
    expect(idleFor(core, 1000)).toBe(KEEP_WARM_TRIAL_STEPS);
    expect(core.keepWarmWakeAtMs()).toBeNull();
    expect(runner.warms).toBe(KEEP_WARM_TRIAL_STEPS);
  });

  it('none when it waited for a core since it slept: skipped, the next a period later', async () => {
    const { core, runner, answer } = thinker(1000);
    await answer('r');
    vi.advanceTimersByTime(KEEP_WARM_MIN_PERIOD_MS);
    let asked = 0;
    const waited = (ms: number) => () => (asked++, ms);
    expect(core.keepWarm(waited(KEEP_WARM_MAX_CORE_WAIT_MS + 0.05))).toBe(false);
    expect(runner.warms).toBe(0);
    expect(core.keepWarmWakeAtMs()).toBe(Date.now() + KEEP_WARM_MIN_PERIOD_MS);
    vi.advanceTimersByTime(KEEP_WARM_MIN_PERIOD_MS - 1);
    expect(core.keepWarm(waited(0))).toBe(false); // not due yet: the wait is not asked
    expect(asked).toBe(1);
    vi.advanceTimersByTime(1);
    expect(core.keepWarm(waited(KEEP_WARM_MAX_CORE_WAIT_MS))).toBe(true);
    expect(runner.warms).toBe(1);
  });

  it('none while a request is live', async () => {
    const { core, runner, answer, add } = thinker(1000);
    await answer('r');
    add('waiting'); // admitted, not stepped yet
    expect(idleFor(core, 100)).toBe(0);
    expect(core.keepWarmWakeAtMs()).toBeNull();
    expect(runner.warms).toBe(0);
  });

  it('none without keepWarmMs (a config that does not hold the cores polling)', async () => {
    const { core, runner, answer } = thinker();
    await answer('r');
    expect(idleFor(core, 200)).toBe(0);
    expect(core.keepWarmWakeAtMs()).toBeNull();
    expect(runner.warms).toBe(0);
  });
});
