/**
 * Migrations (src/engine/requests/Migrations.ts, wired by followPool.ts) on a real request record and stream, with a
 * pool that is only its events and instances: a request lost with its stage's only instance waits; the READY of any
 * instance of that stage (another name, or the old one) lets its replay in, a request finishing retries a replay that
 * was not admitted, time alone does nothing (no poll); past its max_wait_ms it ends with STAGE_LOST saying so, but
 * not before main has read what reached its pipe by then (a READY behind a stall of main's lets the replay in).
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GenerateRequest, OutputEvent } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import { logger } from '../../src/common/log.ts';
import type { InstanceView } from '../../src/engine/pool/StageInstance.ts';
import type { StagePool } from '../../src/engine/pool/StagePool.ts';
import type { StagePoolEvents } from '../../src/engine/pool/StagePoolEvents.ts';
import { followPool } from '../../src/engine/requests/followPool.ts';
import { Migrations } from '../../src/engine/requests/Migrations.ts';
import { RequestRecord } from '../../src/engine/requests/RequestRecord.ts';
import { RequestRegistry } from '../../src/engine/requests/RequestRegistry.ts';
import { RequestStream } from '../../src/engine/RequestStream.ts';
import { configWith } from '../helpers/engine.ts';
import { afterPoll, socketPair } from '../helpers/loopStall.ts';

const WAIT_MS = 5000;
const base = configWith('two-host.yaml'); // Code2Wav remote: instances join it over Redis
const migration = { maxAttempts: 2, maxReplayTokens: 4096, maxWaitMs: WAIT_MS };
const graph: StageGraph = { ...base, stages: base.stages.map((s) => ({ ...s, engine: { ...s.engine, migration } })) };
const view = (instance: string, status: InstanceView['status'] = 'ready'): InstanceView => ({
  spec: graph.stages.find((s) => s.stageId === instance.split('#')[0])!,
  replica: 0,
  instance,
  status,
  inFlight: new Set(),
  stats: null,
  worker: null,
});

class FakePool extends EventEmitter<StagePoolEvents> {
  readonly instances = new Map<string, InstanceView>();
  send(): void {}
  /** An instance joins: in the pool, then READY, in StagePool's order. */
  join(instance: string): void {
    this.instances.set(instance, view(instance));
    this.emit('ready', this.instances.get(instance)!, undefined);
  }
  /** The instance is lost with `runIds` in flight: it leaves the pool, then its requests hear of it. */
  lose(instance: string, runIds: string[]): void {
    this.instances.delete(instance);
    this.emit('lost', view(instance, 'stopped'), runIds, { code: ErrorCodes.STAGE_LOST, message: `${instance} lost` });
  }
}

let pool: FakePool;
let requests: RequestRegistry;
/** The replays admitted: run id -> the instance of each stage. */
let admitted: Map<string, ReadonlyMap<string, string>>;
/** Refuses the next replay with this (its instance is full): the request waits on. */
let refuseNext: string | null;

beforeEach(() => {
  vi.useFakeTimers();
  pool = new FakePool();
  for (const name of ['thinker#0', 'talker#0', 'code2wav#a']) pool.instances.set(name, view(name));
  requests = new RequestRegistry();
  admitted = new Map();
  refuseNext = null;
  const admitReplay = (record: RequestRecord, runId: string) => {
    const why = refuseNext;
    refuseNext = null;
    if (why) throw new ChorusError(ErrorCodes.OVERLOADED, why);
    record.replayed(null);
    const instances = new Map([...pool.instances.values()].map((v) => [v.spec.stageId, v.instance]));
    admitted.set(runId, instances);
    return instances;
  };
  const log = logger.child({ test: 'migrations' });
  const ctx = { graph, requests, log, audio: () => null, admitReplay };
  const migrations = new Migrations({ ...ctx, pool: pool as unknown as StagePool });
  followPool(pool as unknown as StagePool, requests, null, migrations);
});

afterEach(() => {
  vi.useRealTimers();
});

/** A request running on thinker#0, talker#0 and code2wav#a, and its output events as they come. */
function running(requestId = 'req-1'): { record: RequestRecord; events: OutputEvent[] } {
  const stages = new Map([...pool.instances.values()].map((v) => [v.spec.stageId, v.instance]));
  const noText = { push: () => '', flush: () => '' };
  const stream = new RequestStream(
    requestId,
    stages,
    [{ stageId: 'code2wav', type: 'audio' }],
    3,
    [],
    noText,
    null,
    () => requests.release(record),
  );
  const events: OutputEvent[] = [];
  stream.events.events.subscribe((e) => events.push(e));
  const request: GenerateRequest = { messages: [], modalities: ['text', 'audio'] };
  const prompt = { promptTokenIds: [], items: [], spans: [] };
  const record = new RequestRecord(stream, {
    request,
    prompt,
    route: null,
    media: null,
    ec: null,
    adapter: { cancel() {} },
  });
  requests.add(record);
  return { record, events };
}

describe('Migrations: the only instance of a stage lost', () => {
  it('the request waits for any instance of that stage, woken by its READY, not by time', () => {
    const { record, events } = running();
    pool.lose('code2wav#a', ['req-1']);
    expect(record.migrating).toMatchObject({ stageId: 'code2wav', lostInstance: 'code2wav#a' });
    vi.advanceTimersByTime(WAIT_MS - 1); // nothing polls: with no event, no attempt
    pool.join('talker#1'); // an instance of another stage: still none of code2wav
    expect(admitted.size).toBe(0);
    pool.join('code2wav#b'); // a new name
    expect(admitted.get('req-1~1')?.get('code2wav')).toBe('code2wav#b');
    expect(record.migrating).toBeNull();
    vi.advanceTimersByTime(WAIT_MS); // its deadline went with the wait
    expect(events.filter((e) => e.type === 'done')).toEqual([]);

    // Lost again, and back under the same name: the replay runs there.
    pool.lose('code2wav#b', ['req-1~1']);
    pool.join('code2wav#b');
    expect(admitted.get('req-1~2')?.get('code2wav')).toBe('code2wav#b');
  });

  it('a replay not admitted (the instance was full) is retried when a request finishes, and only then', () => {
    const { record } = running();
    pool.lose('code2wav#a', ['req-1']);
    refuseNext = 'code2wav#b is full';
    pool.join('code2wav#b');
    expect(admitted.size).toBe(0);
    expect(record.migrating).not.toBeNull();
    pool.emit('finished', view('code2wav#b'), {
      type: 'finished',
      requestId: 'other',
      finishReason: 'stop',
      numTokens: 1,
    });
    expect([...admitted.keys()]).toEqual(['req-1~1']);
  });

  it('past max_wait_ms it ends with STAGE_LOST: how long, which setting, which stage, how to start one', () => {
    const { events } = running();
    pool.lose('code2wav#a', ['req-1']);
    vi.advanceTimersByTime(WAIT_MS);
    vi.advanceTimersToNextTimer(); // the give-up, after the poll (setImmediate)
    expect(events.filter((e) => e.type === 'done')).toEqual([
      expect.objectContaining({
        finishReason: 'error',
        error: {
          code: ErrorCodes.STAGE_LOST,
          message:
            'code2wav#a lost (not migrated: waited 5.0 s (stages.code2wav.engine.migration.max_wait_ms) and no ' +
            'instance of stage code2wav became ready: start an instance of stage code2wav (chorus stage --config ' +
            '<file> --stage code2wav on a host of this deployment))',
        },
      }),
    ]);
    pool.join('code2wav#b'); // too late: nothing is replayed
    expect(admitted.size).toBe(0);
  });
});

describe('Migrations: the deadline after a stall', () => {
  // Main's timers and clock are the test's, its setImmediate and sockets real: advancing the timers is main's stall,
  // through which the deadline's timer comes due before the poll that reads its pipes.
  beforeEach(() => {
    vi.useRealTimers();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });

  it('admits the replay whose READY waited in the pipe while the deadline came due', async () => {
    const { server, client, close } = await socketPair();
    try {
      const read = new Promise<void>((resolve) => server.on('data', () => (pool.join('code2wav#b'), resolve())));
      const { record, events } = running();
      await afterPoll(); // from the check phase: the timers run next, then the poll
      pool.lose('code2wav#a', ['req-1']);
      client.write('ready'); // the new instance's READY reached main's pipe in time...
      vi.advanceTimersByTime(WAIT_MS); // ...while main stalled past max_wait_ms: its timer runs before the pipe is read
      await read;
      expect(admitted.get('req-1~1')?.get('code2wav')).toBe('code2wav#b');
      expect(record.migrating).toBeNull();
      await afterPoll();
      expect(events.filter((e) => e.type === 'done')).toEqual([]);
    } finally {
      close();
    }
  });

  it('ends the request still waiting after the poll', async () => {
    const { events } = running();
    pool.lose('code2wav#a', ['req-1']);
    vi.advanceTimersByTime(WAIT_MS);
    expect(events.filter((e) => e.type === 'done')).toEqual([]); // not from the timer itself
    await afterPoll();
    expect(events.filter((e) => e.type === 'done')).toEqual([
      expect.objectContaining({
        finishReason: 'error',
        error: expect.objectContaining({ code: ErrorCodes.STAGE_LOST }),
      }),
    ]);
  });
});
