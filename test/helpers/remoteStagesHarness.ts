/**
 * Main's side of one remote instance (src/control/Membership.ts) over a stand-in for its control link: the
 * instance beats, is booted and joins as `chorus serve` would see it, and what it then reports goes through the real
 * guard, Membership, InstanceEvents and the /metrics bridge. For unit tests of what main does with reports; the
 * real link is test/e2e's.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import type { ControlLink } from '../../src/control/ControlLink.ts';
import { Membership } from '../../src/control/Membership.ts';
import type { RemoteStageHandle } from '../../src/control/RemoteStageHandle.ts';
import { packControl } from '../../src/control/wire.ts';
import { InstanceEvents, type InstanceEventsContext } from '../../src/engine/pool/InstanceEvents.ts';
import type { StageInstance } from '../../src/engine/pool/StageInstance.ts';
import type { StageToMain } from '../../src/worker/messages.ts';

const CONFIG_HASH = 'fuzz-config';
const LEASE = 'lease-of-the-instance host 1';

export async function remoteStagesHarness(instance: string, stageId: string) {
  const listeners = new Map<string, (bytes: Buffer) => void>();
  const link = {
    up: true,
    where: 'a stand-in',
    nameOf: (at: { kind: string }) => at.kind,
    subscribe: async (at: { kind: string }, listener: (bytes: Buffer) => void) => void listeners.set(at.kind, listener),
    onDown: () => undefined,
    onReconnect: () => undefined,
    close: async () => undefined,
    writeDeployment: async () => undefined,
    deleteDeployment: async () => undefined,
    leaseHolder: async () => LEASE,
    publish: async () => undefined,
    dropInbox: () => undefined,
  } as unknown as ControlLink;
  const graph = {
    stages: [{ stageId, joinable: true }],
    connectors: {},
    configHash: CONFIG_HASH,
  } as never as StageGraph;
  const remote = new Membership(
    link,
    graph,
    CONFIG_HASH,
    () => [],
    () => [],
    pino({ level: 'silent' }),
  );
  await remote.start();
  const toMain = listeners.get('to_main')!;

  const drops = new Map<string, number>();
  const countDrop = (message: unknown) => {
    const { channel, reason } = message as { channel: string; reason: string };
    if (channel === 'to_main') drops.set(reason, (drops.get(reason) ?? 0) + 1);
  };
  subscribe(channelNames.controlDropped, countDrop);

  const joined = new Promise<RemoteStageHandle>((resolve) => remote.once('joined', resolve));
  const startedAtMs = Date.now();
  const beat = () =>
    listeners.get('heartbeat')!(
      packControl('heartbeat', {
        instance,
        stageId,
        host: 'stage-host',
        pid: 1,
        configHash: CONFIG_HASH,
        startedAtMs,
        lease: LEASE,
      }),
    );
  beat();
  const facts = { kind: 'talker', conditionDim: 8, numCodebooks: 4, framesPerToken: 2, kvBytesPerToken: 64 } as const;
  const settings = { stageId, replica: 0, pid: 1, threads: 1, modelFiles: [], loadMs: 1, facts };
  // The lease is read (a promise) before the boot: say READY until it is admitted and joins.
  const ready = setInterval(() =>
    toMain(packControl('to_main', { from: instance, lease: LEASE, msg: { type: 'ready', settings } })),
  );
  const handle = await joined;
  clearInterval(ready);

  // What the pool does with the handle's messages (StagePool wires a remote instance so).
  const events = new InstanceEvents({
    events: new EventEmitter(),
    inboxes: { released: () => undefined },
  } as unknown as InstanceEventsContext);
  const inst = { instance, spec: { stageId }, inFlight: new Map(), stats: null } as unknown as StageInstance;
  const handled: StageToMain[] = [];
  handle.on('message', (msg) => {
    handled.push(msg);
    events.onMessage(inst, msg);
  });

  return {
    handle,
    handled,
    inst,
    /** Delivers one heartbeat of this instance on main's heartbeat channel. */
    beat,
    /** Publishes a report from `from` (this instance by default, under its lease) on main's channel, any value. */
    report: (msg: unknown, from = instance, lease = LEASE) =>
      toMain(packControl('to_main', { from, lease, msg } as never)),
    dropped: (reason: string) => drops.get(reason) ?? 0,
    settled: () => new Promise((resolve) => setImmediate(resolve)),
    close: async () => {
      unsubscribe(channelNames.controlDropped, countDrop);
      await remote.close();
    },
  };
}
