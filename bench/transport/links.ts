/**
 * The parent's end of each benchmarked transport, behind one small interface, plus the peer process.
 * Every link is a request/response pair of one-way channels to a forked benchPeer.ts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { ShmRing } from '../../transport/shm/ShmRing.ts';
import { FileChunkConnector } from './FileChunkConnector.ts';
import { READY, Tag, WAIT_MS, type PeerSetup } from './protocol.ts';

export type TransportKind = 'shm' | 'file' | 'ipc';

export interface Link {
  send(frame: Uint8Array): Promise<void>;
  receive(): Promise<Uint8Array>;
  close(): Promise<void>;
}

const PEER = new URL('./benchPeer.ts', import.meta.url).pathname;

async function startPeer(setup: PeerSetup, serialization: 'json' | 'advanced'): Promise<ChildProcess> {
  const child = fork(PEER, [], {
    execArgv: ['--import', 'tsx'],
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

export async function openLink(kind: TransportKind, ringBytes: number): Promise<Link> {
  if (kind === 'shm') return openShmLink(ringBytes);
  if (kind === 'file') return openFileLink();
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
