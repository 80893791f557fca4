/**
 * A step loop over a real ring: a chunk its upstream puts while a step runs is handed in before the very next step.
 * The step a chunk wakes runs inside the event loop's poll phase, where setImmediate's turn comes before the loop
 * looks at the rings again; without reading them as the step ends, the chunk waited for that turn, an empty step and
 * a sleep (StageLoop.turn, ChunkTransferAdapter.readNow).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { logger } from '../../src/common/log.ts';
import { StageLoop } from '../../src/worker/StageLoop.ts';
import type { StageCore } from '../../src/worker/StageCore.ts';
import { ChunkTransferAdapter, type Arrival } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { ShmConnector, type ShmEdge } from '../../transport/shm/ShmConnector.ts';

const UP = 'thinker#0';
const ME = 'talker#0';
const REQUEST = 'req-1';

let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

function openEdge(): { edges: readonly ShmEdge[]; producer: ShmConnector; consumer: ShmConnector } {
  const edges = ShmConnector.createRings([{ from: UP, to: ME }], 1 << 16);
  const producer = ShmConnector.open({ edges, me: UP });
  const consumer = ShmConnector.open({ edges, me: ME });
  cleanup = async () => {
    await Promise.all([producer.close(), consumer.close()]);
    ShmConnector.unlinkRings(edges);
  };
  return { edges, producer, consumer };
}

describe('StageLoop over an shm edge', () => {
  it('hands a chunk put during a step in before the next step', async () => {
    const { producer, consumer } = openEdge();
    const upstream = new ChunkTransferAdapter(producer, UP, 'thinker', () => {});
    const target = { toInstance: ME, toStageId: 'talker', keyStage: 'talker' };
    const later = () => Date.now() + 10_000;
    const send = () => void upstream.saveAsync(REQUEST, target, { final: false }, later());

    let loop: StageLoop | null = null;
    const adapter = new ChunkTransferAdapter(consumer, ME, 'talker', () => loop?.wake());
    // What each step that had work found handed in (chunk seqs), and the empty steps between them.
    const steps: (number[] | 'empty')[] = [];
    let inbox: number[] = [];
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const core = {
      size: 1,
      nextWakeAtMs: () => null,
      keepWarm: () => false,
      keepWarmWakeAtMs: () => null,
      takeContinuation: () => false,
      stats: () => ({}),
      add: () =>
        adapter.expect(REQUEST, {
          fromInstance: UP,
          fromStageId: 'thinker',
          keyStage: 'talker',
          firstChunkDeadline: later(),
          chunkTimeoutMs: 10_000,
        }),
      onArrivals: (arrivals: readonly Arrival[]) => {
        for (const a of arrivals) if (a.chunk) inbox.push(a.chunk.meta.seq);
      },
      step: () => {
        const got = inbox;
        inbox = [];
        if (got.length === 0) {
          if (steps.length > 0) steps.push('empty');
          return false;
        }
        steps.push(got);
        if (got.includes(0)) send(); // the upstream's next chunk goes into the ring while this step runs
        if (got.includes(1)) resolveDone();
        return true;
      },
    } as unknown as StageCore;
    loop = new StageLoop(core, adapter, () => {}, logger);
    const running = loop.run();
    const upstreams = [{ instance: UP, stageId: 'thinker' }];
    loop.deliver({ type: 'add', requestId: REQUEST, upstreams } as unknown as Parameters<StageLoop['deliver']>[0]);
    await new Promise<void>((r) => setImmediate(r)); // the add is in, the loop asleep: chunk 0 wakes it from the rings
    send();
    await done;
    loop.stop();
    await running;
    await adapter.close();
    await upstream.close();
    expect(steps.slice(0, 2)).toEqual([[0], [1]]);
  });
});
