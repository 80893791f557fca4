/**
 * The parent's end of each benchmarked transport, behind one small interface, plus the peer process.
 * Every link is a request/response pair of one-way channels to a forked benchPeer.ts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chunkKey, loaderFlagsFor, moduleFile, RedisConnector, ShmRing } from '../../src/index.ts';
import { FileChunkConnector } from './FileChunkConnector.ts';
import { READY, REDIS_BENCH, Tag, WAIT_MS, redisBenchOptions, type PeerSetup } from './protocol.ts';

export const TRANSPORT_KINDS = ['shm', 'file', 'ipc', 'redis'] as const;
export type TransportKind = (typeof TRANSPORT_KINDS)[number];

/** What each link needs to open: the shm rings' capacity (also the redis edge budget) and where Redis is. */
export interface LinkSettings {
  readonly ringBytes: number;
  /** Required for 'redis'. */
  readonly redisUrl?: string;
}

export interface Link {
  send(frame: Uint8Array): Promise<void>;
  receive(): Promise<Uint8Array>;
  close(): Promise<void>;
}

const PEER = moduleFile('./benchPeer', import.meta.url).pathname;

async function startPeer(setup: PeerSetup, serialization: 'json' | 'advanced'): Promise<ChildProcess> {
  const child = fork(PEER, [], {
    execArgv: loaderFlagsFor(PEER),
    serialization,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = once(child, 'message');
  child.send(setup);
  const [msg] = await Promise.race([ready, once(child, 'exit').then(() => [null])]);
  if (msg !== READY) throw new Error(`bench peer for ${setup.transport} did not start`);
  return child;
}

async function stopPeer(child: ChildProcess, sendStop: () => unknown): Promise<void> {
  const exited = child.exitCode !== null ? Promise.resolve() : once(child, 'exit').then(() => undefined);
  await sendStop();
  if (child.connected) child.disconnect();
  await exited;
}

export async function openLink(kind: TransportKind, settings: LinkSettings): Promise<Link> {
  if (kind === 'shm') return openShmLink(settings.ringBytes);
  if (kind === 'file') return openFileLink();
  if (kind === 'redis') {
    if (settings.redisUrl === undefined) throw new Error('the redis link needs a Redis URL');
    return openRedisLink(settings.redisUrl, settings.ringBytes);
  }
  return openIpcLink();
}

async function openShmLink(ringBytes: number): Promise<Link> {
  const toPeer = ShmRing.create({ capacityBytes: ringBytes });
  const fromPeer = ShmRing.create({ capacityBytes: ringBytes });
  const release = (): void => {
    for (const ring of [toPeer, fromPeer]) {
      ring.close();
      ring.unlink();
    }
  };
  let child: ChildProcess;
  try {
    child = await startPeer({ transport: 'shm', toPeer: toPeer.name, fromPeer: fromPeer.name }, 'json');
  } catch (err) {
    release();
    throw err;
  }
  return {
    send: (frame) => toPeer.write(frame, Date.now() + WAIT_MS),
    async receive() {
      const frame = await fromPeer.read(Date.now() + WAIT_MS);
      if (frame === null) throw new Error('shm bench peer stopped answering');
      return frame;
    },
    async close() {
      await stopPeer(child, () => toPeer.write(Uint8Array.of(Tag.Stop), Date.now() + WAIT_MS));
      release();
    },
  };
}

async function openFileLink(): Promise<Link> {
  const namespace = `${process.pid}-${Date.now().toString(36)}`;
  const files = new FileChunkConnector(namespace);
  const child = await startPeer({ transport: 'file', namespace }, 'json');
  let down = 0;
  let up = 0;
  return {
    send: async (frame) => files.put(`d${down++}`, frame),
    receive: () => files.get(`u${up++}`, Date.now() + WAIT_MS),
    async close() {
      await stopPeer(child, () => files.put(`d${down++}`, Uint8Array.of(Tag.Stop)));
      files.removeAll();
    },
  };
}

async function openIpcLink(): Promise<Link> {
  const child = await startPeer({ transport: 'ipc' }, 'advanced');
  const queued: Uint8Array[] = [];
  let waiter: ((frame: Uint8Array) => void) | null = null;
  child.on('message', (frame: Uint8Array) => {
    if (waiter) {
      const w = waiter;
      waiter = null;
      w(frame);
    } else {
      queued.push(frame);
    }
  });
  return {
    async send(frame) {
      child.send(frame);
    },
    receive() {
      const next = queued.shift();
      if (next !== undefined) return Promise.resolve(next);
      return new Promise((resolve) => (waiter = resolve));
    },
    async close() {
      await stopPeer(child, () => child.send(Uint8Array.of(Tag.Stop)));
    },
  };
}

/**
 * Two RedisConnectors, this process's and the peer's, as stage instances use them. The edge budget (max_edge_bytes)
 * is the shm ring's capacity, so both throughput runs have as many bytes in flight. Keys get a prefix of their own:
 * a bench on a shared Redis never touches a deployment's lists.
 */
async function openRedisLink(url: string, maxEdgeBytes: number): Promise<Link> {
  const setup = {
    transport: 'redis' as const,
    url,
    keyPrefix: `chorus-bench-${process.pid}-${Date.now().toString(36)}`,
    maxEdgeBytes,
  };
  const { main, peer, requestId } = REDIS_BENCH;
  const connector = await RedisConnector.open(main, redisBenchOptions(setup));
  let child: ChildProcess;
  try {
    child = await startPeer(setup, 'json');
  } catch (err) {
    await connector.close();
    throw err;
  }
  let down = 0;
  let up = 0;
  const send = (frame: Uint8Array) =>
    connector.put(main, peer, chunkKey(requestId, 'peer', down++), frame, Date.now() + WAIT_MS);
  return {
    send,
    receive: () => connector.get(peer, main, chunkKey(requestId, 'main', up++), Date.now() + WAIT_MS),
    async close() {
      await stopPeer(child, () => send(Uint8Array.of(Tag.Stop)));
      connector.cleanup(requestId);
      await connector.close();
    },
  };
}
