/**
 * StageLoop sleeps until something arrives or the core's next deadline (no polling), then steps again; with nothing to
 * run it does its idle work a slice at a time, looking for work between slices, before it sleeps. An add's input that
 * was already waiting is handed in before the step after the add; an add with no upstream steps at once.
 */
import { describe, expect, it } from 'vitest';
import { logger } from '../../src/common/log.ts';
import { StageLoop } from '../../src/worker/StageLoop.ts';
import type { StageCore } from '../../src/worker/StageCore.ts';
import type { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';

/** What a fake core has nothing of: no deadline, no keep-warm step, no continuation, empty stats. */
const quiet = {
  nextWakeAtMs: () => null,
  keepWarm: () => false,
  keepWarmWakeAtMs: () => null,
  takeContinuation: () => false,
  stats: () => ({}),
};

const idleAdapter = {
  readNow: () => {},
  processPendingChunks: () => [],
  hasPendingArrivals: false,
  pendingSendBytes: 0,
} as unknown as ChunkTransferAdapter;

/** A core with nothing to run whose next deadline is `wakeAt`; resolves `woken` on its second step. */
function fakeCore(wakeAt: () => number | null) {
  const steps: number[] = [];
  let resolveSecond!: () => void;
  const second = new Promise<void>((r) => (resolveSecond = r));
  const core = {
    size: 0,
    onArrivals: () => {},
    step: () => {
      steps.push(Date.now());
      if (steps.length === 2) resolveSecond();
      return false;
    },
    ...quiet,
    nextWakeAtMs: wakeAt,
  } as unknown as StageCore;
  return { core, steps, second };
}

describe('StageLoop', () => {
  it('runs the step a step asked for at once, without a turn of the event loop between them', async () => {
    const order: string[] = [];
    let asked = false;
    let steps = 0;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const core = {
      ...quiet,
      size: 1,
      onArrivals: () => {},
      step: () => {
        steps++;
        order.push(`step ${steps}`);
        if (steps === 1) {
          setImmediate(() => order.push('turn')); // what a turn of the loop would run
          asked = true; // a split first prefill's first piece
        }
        if (steps === 3) done();
        return steps <= 3;
      },
      takeContinuation: () => {
        const a = asked;
        asked = false;
        return a;
      },
    } as unknown as StageCore;
    const loop = new StageLoop(core, idleAdapter, () => {}, logger);
    const running = loop.run();
    await finished;
    loop.stop();
    await running;
    expect(order.slice(0, 4)).toEqual(['step 1', 'step 2', 'turn', 'step 3']);
  });

  it("wakes at the core's deadline with nothing arriving", async () => {
    const start = Date.now();
    const { core, steps, second } = fakeCore(() => (steps.length === 1 ? start + 40 : null));
    const loop = new StageLoop(core, idleAdapter, () => {}, logger);
    const running = loop.run();
    await second;
    expect(steps[1] - start).toBeGreaterThanOrEqual(39); // libuv may round a timer down by a millisecond
    loop.stop();
    await running;
  });

  it("tells its load hook the core's requests after each step, before it waits", async () => {
    const sizes: number[] = [];
    let size = 3;
    let second!: () => void;
    const stepped = new Promise<void>((r) => (second = r));
    let steps = 0;
    const core = {
      get size() {
        return size;
      },
      onArrivals: () => {},
      step: () => {
        if (++steps === 2) second();
        size = 1; // the step finished two of them
        return false;
      },
      ...quiet,
    } as unknown as StageCore;
    const loop = new StageLoop(
      core,
      idleAdapter,
      () => {},
      logger,
      undefined,
      (n) => sizes.push(n),
    );
    const running = loop.run();
    loop.wake();
    await stepped;
    expect(sizes.slice(0, 2)).toEqual([1, 1]);
    loop.stop();
    await running;
  });

  it('an arrival wakes it before the deadline, and the deadline timer is cleared', async () => {
    const { core, steps, second } = fakeCore(() => Date.now() + 60_000);
    const loop = new StageLoop(core, idleAdapter, () => {}, logger);
    const running = loop.run();
    const before = Date.now();
    loop.wake();
    await second;
    expect(steps[1] - before).toBeLessThan(1000);
    loop.stop();
    await running;
  });

  it("wakes for the core's keep-warm step with nothing arriving, runs it as idle work, tells it its wait", async () => {
    const start = Date.now();
    const warmedAt: number[] = [];
    const waitedForCore: number[] = [];
    let resolveWarmed!: () => void;
    const warmed = new Promise<void>((r) => (resolveWarmed = r));
    const due = () => (warmedAt.length === 0 ? start + 40 : null); // one keep-warm step, then none (the window ended)
    const core = {
      ...quiet,
      size: 0,
      onArrivals: () => {},
      step: () => false,
      keepWarm: (coreWaitMs: () => number) => {
        const at = due();
        if (at === null || Date.now() < at) return false;
        warmedAt.push(Date.now());
        waitedForCore.push(coreWaitMs());
        resolveWarmed();
        return true;
      },
      keepWarmWakeAtMs: due,
    } as unknown as StageCore;
    const loop = new StageLoop(core, idleAdapter, () => {}, logger);
    const running = loop.run();
    await warmed;
    expect(warmedAt[0] - start).toBeGreaterThanOrEqual(39); // libuv may round a timer down by a millisecond
    loop.stop();
    await running;
    expect(warmedAt).toHaveLength(1);
    // Told how long the stage waited for a core since it went to sleep (the kernel's count: within the sleep's 40 ms)
    expect(waitedForCore[0]).toBeGreaterThanOrEqual(0);
    expect(waitedForCore[0]).toBeLessThan(warmedAt[0] - start);
  });

  it('does its idle work a slice at a time, stepping between slices, then sleeps until woken', async () => {
    const { core, steps } = fakeCore(() => null);
    let slices = 3;
    const stepsAtSlice: number[] = [];
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const idle = () => {
      stepsAtSlice.push(steps.length);
      if (slices === 0) {
        resolveDone();
        return false;
      }
      slices--;
      return true;
    };
    const loop = new StageLoop(core, idleAdapter, () => {}, logger, idle);
    const running = loop.run();
    await done;
    expect(stepsAtSlice).toEqual([1, 2, 3, 4]); // a step (looking for work) before each slice
    // Asleep now: no step and no slice until something wakes it.
    await new Promise<void>((r) => setImmediate(r));
    expect(steps).toHaveLength(4);
    expect(stepsAtSlice).toHaveLength(4);
    loop.stop();
    await running;
  });

  it("hands an add's already-waiting input in before the step after the add", async () => {
    // The adapter's receive for an add (ChunkTransferAdapter.expect) gets a held chunk through a chain of awaits, as
    // its receive loop does: the chunk is queued some promise turns after the add is handled, not during it.
    const arrivals: { requestId: string }[] = [];
    let onArrival = () => {};
    const held = async (requestId: string) => requestId; // the connector's get of a chunk already there
    const receive = async (requestId: string) => {
      const got = await held(requestId);
      arrivals.push({ requestId: got });
      onArrival();
    };
    const adapter = {
      readNow: () => {},
      processPendingChunks: () => arrivals.splice(0),
      get hasPendingArrivals() {
        return arrivals.length > 0;
      },
      pendingSendBytes: 0,
    } as unknown as ChunkTransferAdapter;
    const handedIn = new Set<string>();
    let added = false;
    const stepsSaw: boolean[] = [];
    let resolveStepped!: () => void;
    const stepped = new Promise<void>((r) => (resolveStepped = r));
    const core = {
      size: 0,
      add: (msg: { requestId: string }) => void receive(msg.requestId),
      onArrivals: (a: readonly { requestId: string }[]) => a.forEach((x) => handedIn.add(x.requestId)),
      step: () => {
        if (added) {
          stepsSaw.push(handedIn.has('newcomer'));
          resolveStepped();
        }
        return false;
      },
      ...quiet,
    } as unknown as StageCore;
    const loop = new StageLoop(core, adapter, () => {}, logger);
    onArrival = () => loop.wake();
    const running = loop.run();
    await new Promise<void>((r) => setImmediate(r)); // the loop is asleep
    added = true;
    const upstreams = [{ instance: 'thinker#0', stageId: 'thinker' }];
    loop.deliver({ type: 'add', requestId: 'newcomer', upstreams } as unknown as Parameters<StageLoop['deliver']>[0]);
    await stepped;
    expect(stepsSaw[0]).toBe(true); // the first step after the add ran with its input
    loop.stop();
    await running;
  });

  it('steps an add that receives from no upstream before the event loop turns again', async () => {
    // A text-only Thinker's add carries its prompt: no get starts, so the loop does not give the event loop a turn
    // for inputs before its step (a turn is ~0.1 ms of a first packet on a core whose caches went cold meanwhile).
    const order: string[] = [];
    const added = (upstreams: readonly unknown[]) => {
      let resolveStepped!: () => void;
      const stepped = new Promise<void>((r) => (resolveStepped = r));
      const core = {
        size: 0,
        add: () => {},
        onArrivals: () => {},
        step: () => {
          if (order.length > 0) {
            order.push('step');
            resolveStepped();
          }
          return false;
        },
        ...quiet,
      } as unknown as StageCore;
      const loop = new StageLoop(core, idleAdapter, () => {}, logger);
      const running = loop.run();
      return { loop, running, stepped, upstreams };
    };
    for (const upstreams of [[], [{ instance: 'audio-encoder#0', stageId: 'audio-encoder' }]]) {
      order.length = 0;
      const { loop, running, stepped } = added(upstreams);
      await new Promise<void>((r) => setImmediate(r)); // the loop is asleep
      order.push(upstreams.length === 0 ? 'add' : 'add with an upstream');
      loop.deliver({ type: 'add', requestId: 'r', upstreams } as unknown as Parameters<StageLoop['deliver']>[0]);
      setImmediate(() => order.push('turn'));
      await stepped;
      await new Promise<void>((r) => setImmediate(r)); // the turn has come by now in both orders
      loop.stop();
      await running;
      expect(order.slice(0, 3)).toEqual(
        upstreams.length === 0 ? ['add', 'step', 'turn'] : ['add with an upstream', 'turn', 'step'],
      );
    }
  });
});
