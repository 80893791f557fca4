/**
 * A stage instance's heartbeat, published by a thread of its own on a Redis connection of its own (started by
 * HeartbeatThread.ts). A model step holds the step thread for as long as it runs (a second and more for long media
 * on a loaded machine), and beats that waited for it made main declare a busy instance lost (HEARTBEAT_TTL_MS). The
 * beats still stop when the process dies, freezes or loses its network: this thread goes with it. A step thread that
 * hangs while this one beats is found by main's hang watch (stage_hang_ms), as for local stages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serializeError } from '../../common/errors.ts';
import { RedisLink } from '../../../transport/redis/redisLink.ts';
import type { HeartbeatData } from './HeartbeatThread.ts';

const data = workerData as HeartbeatData;
const port = parentPort!;
let link: RedisLink;
try {
  link = await RedisLink.connect(data.link);
} catch (err) {
  port.postMessage({ type: 'failed', error: serializeError(err) });
  port.close();
  throw err;
}
const message = Buffer.from(data.message);
const beat = () => {
  // node-redis reconnects by itself; the beats resume when it has.
  if (link.up) link.commands.publish(data.channel, message).catch(() => undefined);
};
beat();
const timer = setInterval(beat, data.intervalMs);
port.on('message', (msg: 'close') => {
  if (msg !== 'close') return;
  clearInterval(timer);
  void link.close().finally(() => port.close());
});
port.postMessage({ type: 'ready' });
