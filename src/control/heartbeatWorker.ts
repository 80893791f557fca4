/**
 * A stage instance's heartbeat, published by a thread of its own on a connection of its own (started by
 * HeartbeatThread.ts). A model step holds the step thread for as long as it runs (a second and more for long media
 * on a loaded machine), and beats that waited for it made main declare a busy instance lost (HEARTBEAT_TTL_MS). The
 * beats still stop when the process dies, freezes or loses its network: this thread goes with it. A step thread that
 * hangs while this one beats is found by main's hang watch (stage_hang_ms), as for local stages.
 *
 * The same beat renews the instance's name lease (InstanceLease.ts) first, and is published only while the lease is
 * ours: an instance whose name was taken over says so to its step thread ('fenced') and beats no more, so main never
 * sees two processes beating under one name.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import type { ControlLink } from './ControlLink.ts';
import { controlEngineOf } from './engines.ts';
import type { FromHeartbeatThread, HeartbeatData } from './heartbeatMessages.ts';
import { claimLease, releaseLease } from './InstanceLease.ts';

const data = workerData as HeartbeatData;
const port = parentPort!;
const post = (msg: FromHeartbeatThread) => port.postMessage(msg);
let link: ControlLink;
try {
  const engine = controlEngineOf(data.engine);
  if (!engine) throw new ChorusError(ErrorCodes.INTERNAL, `no control-plane engine for connector kind ${data.engine}`);
  link = await engine.connect(data.options, data.name);
} catch (err) {
  post({ type: 'failed', error: serializeError(err) });
  port.close();
  throw err;
}
const message = Buffer.from(data.message);
let beating: Promise<void> | null = null;
let fenced = false;
let timer: NodeJS.Timeout | undefined;

async function beatOnce(): Promise<void> {
  if (data.lease) {
    const claim = await claimLease(link, data.lease);
    if (!claim.held) {
      fenced = true;
      clearInterval(timer);
      return post({ type: 'fenced', holder: claim.holder });
    }
  }
  await link.publish({ kind: 'heartbeat' }, message);
}

const beat = () => {
  // The engine's client reconnects by itself (node-redis does); the beats resume when it has. One beat at a time: a
  // slow Redis must not stack claims up.
  if (!link.up || beating || fenced) return;
  beating = beatOnce()
    .catch(() => undefined)
    .finally(() => (beating = null));
};
beat();
timer = setInterval(beat, data.intervalMs);
port.on('message', (msg: 'close') => {
  if (msg !== 'close') return;
  clearInterval(timer);
  // The lease goes with a clean shutdown (no key left behind), after the last beat, so that beat cannot renew it.
  void Promise.resolve(beating)
    .then(() => (data.lease && !fenced && link.up ? releaseLease(link, data.lease) : undefined))
    .catch(() => undefined)
    .then(() => link.close())
    .finally(() => port.close());
});
post({ type: 'ready' });
