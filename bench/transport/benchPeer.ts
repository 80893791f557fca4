/**
 * The far end of the transport bench, a child process: echoes pings and swallows bulk frames on
 * whichever transport the first IPC message names, until a Stop frame.
 */
import { chunkKey, RedisConnector, ShmRing } from '../../src/index.ts';
import { FileChunkConnector } from './FileChunkConnector.ts';
import { READY, REDIS_BENCH, Tag, WAIT_MS, redisBenchOptions, type PeerSetup } from './protocol.ts';

const ACK = Uint8Array.of(Tag.BulkLast);

/** What to send back for a frame: the frame itself, an ack, nothing, or 'stop'. */
function answer(frame: Uint8Array): Uint8Array | null | 'stop' {
  switch (frame[0]) {
    case Tag.Ping:
      return frame;
    case Tag.BulkLast:
      return ACK;
    case Tag.Stop:
      return 'stop';
    default:
      return null;
  }
}

async function serveShm(toPeer: string, fromPeer: string): Promise<void> {
  const inbound = ShmRing.attach(toPeer);
  const outbound = ShmRing.attach(fromPeer);
  process.send?.(READY);
  for (;;) {
    const frame = await inbound.read(Date.now() + WAIT_MS);
    if (frame === null) throw new Error('bench peer: no frame from the parent for 30 s');
    const reply = answer(frame);
    if (reply === 'stop') break;
    if (reply !== null) await outbound.write(reply, Date.now() + WAIT_MS);
  }
  inbound.close();
  outbound.close();
}

async function serveFile(namespace: string): Promise<void> {
  const files = new FileChunkConnector(namespace);
  process.send?.(READY);
  let down = 0;
  let up = 0;
  for (;;) {
    const frame = await files.get(`d${down++}`, Date.now() + WAIT_MS);
    const reply = answer(frame);
    if (reply === 'stop') break;
    if (reply !== null) files.put(`u${up++}`, reply);
  }
}

async function serveRedis(setup: Extract<PeerSetup, { transport: 'redis' }>): Promise<void> {
  const { main, peer, requestId } = REDIS_BENCH;
  const connector = await RedisConnector.open(peer, redisBenchOptions(setup));
  process.send?.(READY);
  try {
    let down = 0;
    let up = 0;
    for (;;) {
      const frame = await connector.get(main, peer, chunkKey(requestId, 'peer', down++), Date.now() + WAIT_MS);
      const reply = answer(frame);
      if (reply === 'stop') break;
      if (reply !== null)
        await connector.put(peer, main, chunkKey(requestId, 'main', up++), reply, Date.now() + WAIT_MS);
    }
  } finally {
    connector.cleanup(requestId);
    await connector.close();
  }
}

function serveIpc(): void {
  const onMessage = (frame: Uint8Array): void => {
    const reply = answer(frame);
    if (reply === 'stop') process.off('message', onMessage);
    else if (reply !== null) process.send?.(reply);
  };
  process.on('message', onMessage);
  process.send?.(READY);
}

process.once('message', (setup: PeerSetup) => {
  let served: Promise<void>;
  if (setup.transport === 'shm') served = serveShm(setup.toPeer, setup.fromPeer);
  else if (setup.transport === 'file') served = serveFile(setup.namespace);
  else if (setup.transport === 'redis') served = serveRedis(setup);
  else served = Promise.resolve(serveIpc());
  served.catch((err: unknown) => {
    process.stderr.write(`bench peer failed: ${String(err)}\n`);
    process.exit(1);
  });
});
