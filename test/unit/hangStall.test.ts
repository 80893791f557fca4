/**
 * The hang watch's tick (src/engine/pool/InstanceEvents.ts checkHangs): a stage whose report reached main's pipe in
 * time is not declared hung, even when main was too busy to read it before the watch's timer came due (timers run
 * before the poll that reads pipes); a stage that stays silent is. The stage's CPU is a stand-in that never moves (a
 * stage waiting for input uses none), so silence alone decides.
 */
import { EventEmitter, once } from 'node:events';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HangWatch } from '../../src/engine/pool/HangWatch.ts';
import { InstanceEvents, type InstanceEventsContext } from '../../src/engine/pool/InstanceEvents.ts';
import type { StageInstance } from '../../src/engine/pool/StageInstance.ts';
import { afterPoll, busyFor, socketPair } from '../helpers/loopStall.ts';

const HANG_MS = 100;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

/** One ready local instance with a request in flight, heard from now, whose process's CPU never moves. */
function watched() {
  const kill = vi.fn();
  const inst = {
    instance: 'talker#0',
    spec: { stageId: 'talker' },
    replica: 0,
    status: 'ready',
    worker: { pid: 42, kill },
    remote: null,
    inFlight: new Set(['r1']),
    lastHeardMs: Date.now(),
    cpuSamples: [{ atMs: Date.now() - 1000, ticks: 7, waitMs: 0 }], // a full CPU window ago
    cpuTicksWhenHeard: 7,
    hungOrphans: [],
    stats: null,
  } as unknown as StageInstance;
  const events = new EventEmitter();
  const pool = new InstanceEvents({
    instances: new Map([[inst.instance, inst]]),
    hangs: new HangWatch(
      HANG_MS,
      () => 7,
      () => 0,
      () => 'S',
    ),
    log: pino({ level: 'silent' }),
    events,
    inboxes: { released: () => undefined },
  } as unknown as InstanceEventsContext);
  closers.push(() => pool.stopHangChecks());
  return { inst, kill, events, pool };
}

describe('the hang watch after a stall', () => {
  it('spares a stage whose report waited in the pipe while the watch came due', async () => {
    const { server, client, close } = await socketPair();
    closers.push(close);
    const { inst, kill, pool } = watched();
    const read = new Promise<void>((resolve) =>
      server.on('data', () => (pool.onMessage(inst, { type: 'stats', stats: {} } as never), resolve())),
    );
    await afterPoll(); // from the check phase: the timers run next, then the poll
    const watch = new Promise<void>((resolve) => setTimeout(() => (pool.checkHangs(), resolve()), HANG_MS));
    client.write('stats'); // the stage's report reached main's pipe...
    busyFor(HANG_MS * 1.5); // ...while main stalled past stage_hang_ms: the watch runs before the pipe is read
    await watch;
    await read;
    await afterPoll();
    expect(kill).not.toHaveBeenCalled();
    expect(inst.inFlight.size).toBe(1);
  });

  it('declares a stage hung that is still silent after the poll', async () => {
    const { inst, kill, events, pool } = watched();
    const hung = once(events, 'hung');
    let killedInTick = true;
    setTimeout(() => (pool.checkHangs(), (killedInTick = kill.mock.calls.length > 0)), HANG_MS * 1.5);
    const [, ids] = (await hung) as [StageInstance, string[]];
    expect(killedInTick).toBe(false); // declared after the poll, not by the timer itself
    expect(ids).toEqual(['r1']);
    expect(kill).toHaveBeenCalledWith('SIGKILL');
    expect(inst.status).toBe('hung');
  });
});
