/**
 * The stage pool (src/engine/pool/StagePool.ts) with stand-in workers and no edges: it boots every replica and
 * says so (ready, with the facts), keeps each instance's in-flight set from add to finished, and on a death tells
 * the request side which requests failed (lost) and restarts the instance, telling the new process to drop them;
 * stopped, it restarts nothing. It never reaches a request: everything goes out as its events.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { SerializedError } from '../../src/common/errors.ts';
import { logger } from '../../src/common/log.ts';
import { StagePool } from '../../src/engine/pool/StagePool.ts';
import type { StageWorkerHandle } from '../../src/engine/stageWorkers.ts';
import type { AddRequest, MainToStage, StageBootArgs } from '../../src/worker/messages.ts';
import type { StageWorkerEvents } from '../../src/worker/StageWorker.ts';
import { configWith, waitFor } from '../helpers/engine.ts';

const graph = configWith('tiny-omni-text-in.yaml');
const log = logger.child({ test: 'stagePool' });

class StandIn extends EventEmitter<StageWorkerEvents> implements StageWorkerHandle {
  static nextPid = 800_000;
  readonly pid = StandIn.nextPid++;
  readonly received: MainToStage[] = [];
  /** Request ids whose add this worker refuses, as StageWorker refuses arguments too large for its channel. */
  readonly refuses = new Set<string>();
  constructor(readonly args: StageBootArgs) {
    super();
  }
  get settings() {
    return null;
  }
  send(msg: MainToStage): void {
    if (msg.type === 'add' && this.refuses.has(msg.requestId)) throw new Error(`add ${msg.requestId} refused`);
    this.received.push(msg);
  }
  async shutdown(): Promise<void> {}
  kill(): void {}
}

async function startPool(restartOnDeath = true) {
  const started: StandIn[] = [];
  const startWorker = async (args: StageBootArgs) => {
    const w = new StandIn(args);
    started.push(w);
    return w;
  };
  const pool = new StagePool({ graph, startWorker, restartOnDeath, log });
  const ready: string[] = [];
  const lost: [string, readonly string[], SerializedError][] = [];
  pool.on('ready', (view) => ready.push(view.instance));
  pool.on('lost', (view, ids, error) => lost.push([view.instance, ids, error]));
  await pool.start([]);
  return { pool, started, ready, lost };
}

const add = (requestId: string) => ({ type: 'add', requestId }) as unknown as AddRequest;
const thinkerOf = (started: StandIn[]) => started.find((w) => graph.stages[w.args.stageIndex].kind === 'thinker')!;

describe('StagePool', () => {
  it('boots every replica, each ready once; health lists them', async () => {
    const { pool, ready } = await startPool();
    const instances = graph.stages.map((s) => `${s.stageId}#0`);
    expect(ready.sort()).toEqual([...instances].sort());
    expect(pool.health().map((h) => [h.instance, h.status])).toEqual(instances.map((i) => [i, 'ready']));
    await pool.stop(0);
  });

  it('a request is in flight on an instance from its add until the instance reports it finished', async () => {
    const { pool, started } = await startPool();
    const finished: string[] = [];
    pool.on('finished', (view, msg) => finished.push(`${view.instance} ${msg.requestId}`));
    pool.admit('thinker#0', add('r1'));
    expect(thinkerOf(started).received).toEqual([add('r1')]);
    expect(pool.instances.get('thinker#0')!.inFlight.has('r1')).toBe(true);
    thinkerOf(started).emit('message', { type: 'finished', requestId: 'r1', finishReason: 'stop', numTokens: 1 });
    expect(pool.instances.get('thinker#0')!.inFlight.size).toBe(0);
    expect(finished).toEqual(['thinker#0 r1']);
    await pool.stop(0);
  });

  it('an add its worker refuses is not counted in flight (no load left behind for good)', async () => {
    const { pool, started } = await startPool();
    thinkerOf(started).refuses.add('big');
    expect(() => pool.admit('thinker#0', add('big'))).toThrow('refused');
    expect(pool.instances.get('thinker#0')!.inFlight.has('big')).toBe(false);
    pool.admit('thinker#0', add('r2'));
    expect([...pool.instances.get('thinker#0')!.inFlight]).toEqual(['r2']);
    await pool.stop(0);
  });

  it('a death fails its requests (lost), restarts the instance and tells the new process to drop them', async () => {
    const { pool, started, lost, ready } = await startPool();
    pool.admit('thinker#0', add('r1'));
    const first = thinkerOf(started);
    first.emit('died', { code: 1, signal: null });
    expect(lost).toHaveLength(1);
    expect(lost[0][0]).toBe('thinker#0');
    expect(lost[0][1]).toEqual(['r1']);
    expect(lost[0][2].code).toBe('CHORUS_ERR_STAGE_DIED');
    await new Promise((resolve) => setImmediate(resolve));
    const second = started.at(-1)!;
    expect(second).not.toBe(first);
    expect(second.received).toEqual([{ type: 'abort', requestId: 'r1', reason: 'the stage restarted' }]);
    expect(ready.filter((i) => i === 'thinker#0')).toHaveLength(2);
    expect(pool.health().find((h) => h.instance === 'thinker#0')).toMatchObject({ status: 'ready', restarts: 1 });
    await pool.stop(0);
  });

  it('estimates a restart without the models the first boot built (/health readyInMs)', async () => {
    const BUILD_MS = 300; // of a first boot of BOOT_MS: a restart costs the rest
    const BOOT_MS = 500;
    let restart: () => void = () => undefined;
    const startWorker = async (args: StageBootArgs) => {
      const w = new StandIn(args);
      if (graph.stages[args.stageIndex].kind !== 'thinker') return w;
      if (started.length > 0)
        await new Promise<void>((resolve) => (restart = resolve)); // restarting until released
      else await new Promise((resolve) => setTimeout(resolve, BOOT_MS)); // the first boot: it built its models
      const settings = { buildMs: started.length === 0 ? BUILD_MS : 0 };
      started.push(w);
      return Object.defineProperty(w, 'settings', { value: settings });
    };
    const started: StandIn[] = [];
    const pool = new StagePool({ graph, startWorker, restartOnDeath: true, log });
    const bootStarted = performance.now();
    await pool.start([]);
    const firstBootMs = performance.now() - bootStarted;
    started[0].emit('died', { code: 1, signal: null });
    const thinker = pool.health().find((h) => h.instance === 'thinker#0')!;
    expect(thinker.status).toBe('restarting');
    // Less the build, and more than nothing (a timer may fire a little before its delay on performance's clock, so a
    // first boot as long as its build could measure shorter than it). /health rounds it to the millisecond: 462 from a
    // boot of 461.95 ms less its build once.
    expect(thinker.readyInMs).toBeLessThanOrEqual(Math.round(firstBootMs - BUILD_MS));
    expect(thinker.readyInMs).toBeGreaterThan(0);
    restart();
    await pool.stop(0);
  });

  it('a restart still booting when the pool stops is shut down once it has booted: no instance of it', async () => {
    let booted: () => void = () => undefined;
    const shut: StandIn[] = [];
    const started: StandIn[] = [];
    const startWorker = async (args: StageBootArgs) => {
      const w = new StandIn(args);
      w.shutdown = async () => void shut.push(w);
      if (started.some((s) => s.args.stageIndex === args.stageIndex))
        await new Promise<void>((resolve) => (booted = resolve)); // the restart boots until released
      started.push(w);
      return w;
    };
    const pool = new StagePool({ graph, startWorker, restartOnDeath: true, log });
    await pool.start([]);
    thinkerOf(started).emit('died', { code: 1, signal: null });
    await pool.stop(0);
    booted();
    await waitFor('the restarted process to be shut down', () => shut.length === graph.stages.length);
    const restarted = started.at(-1)!;
    expect(started).toHaveLength(graph.stages.length + 1);
    expect(shut).toContain(restarted);
    expect(pool.health().find((h) => h.instance === 'thinker#0')!.status).toBe('stopped');
    expect(pool.workerOf('thinker#0')).toBeNull();
  });

  it('stopped, an instance that dies stays down', async () => {
    const { pool, started } = await startPool();
    await pool.stop(0);
    thinkerOf(started).emit('died', { code: null, signal: 'SIGTERM' });
    expect(started).toHaveLength(graph.stages.length);
    expect(pool.health().find((h) => h.instance === 'thinker#0')!.status).toBe('stopped');
  });
});
