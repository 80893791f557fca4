/**
 * Starts video decoders (ffmpeg) from a small long-lived process (decoderSpawnerProcess.mjs), never from main.
 *
 * Why: child_process.spawn forks in the calling thread, and fork copies the caller's page tables before it returns,
 * so main's event loop stopped for a time that grows with main's resident memory: 2 ms at 78 MB, 157 ms at 379 MB,
 * 292 ms at 680 MB (measured here, bench/NOTES.md). In seed 000's burst that stop was the 31 texts' extra ~30 ms. The
 * spawner is forked once, when main is small (the server starts it: startDecoderSpawner), and stays ~45 MB.
 *
 * The frames do not pass through it. For each decode main makes one socket pair per output fd (a connection to its
 * own listening socket in Linux's abstract namespace: no file to clean up, and Node has no socketpair()), sends the
 * child's ends over IPC (SCM_RIGHTS), and reads its own ends; the spawner gives those to ffmpeg as its stdio and
 * closes its copies, so each stream ends when ffmpeg's copy closes, as a pipe from spawn() would.
 *
 * Lifetime: one spawner per process, unreferenced (it never keeps main alive; it is referenced while a decode runs so
 * its exit report arrives). It dies with main: when main's IPC channel closes (main exiting, even on SIGKILL) it kills
 * every decoder still running and exits. If it dies first, the decodes in flight fail (CHORUS_ERR_INTERNAL) and the
 * next decode starts another.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { diagnostics } from '../../common/diagnostics.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { shippedAsset } from '../../common/moduleFile.ts';

const ENTRY = shippedAsset('./decoderSpawnerProcess.mjs', import.meta.url);

/** Main -> spawner. A `stdio` message carries the socket for the child's fd `fd` as its handle. */
export type ToSpawner =
  | { readonly type: 'stdio'; readonly id: number; readonly fd: number }
  | {
      readonly type: 'spawn';
      readonly id: number;
      readonly file: string;
      readonly args: readonly string[];
      /** The child's absolute nice value, from its start (through coreutils' nice); null: the spawner's (main's). */
      readonly nice: number | null;
    }
  | { readonly type: 'kill'; readonly id: number };

/** Spawner -> main. */
export type FromSpawner =
  | { readonly type: 'spawned'; readonly id: number; readonly pid: number }
  | { readonly type: 'exit'; readonly id: number; readonly code: number | null; readonly signal: string | null }
  | { readonly type: 'error'; readonly id: number; readonly message: string };

export interface ChildExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/** A decoder started through the spawner: main's ends of its output fds, its end, a way to stop it. */
export interface SpawnedDecoder {
  /** Main's ends of the child's fds 1, 2, ... in order. */
  readonly outputs: readonly Socket[];
  /**
   * Settles once the child has exited and every output has closed (ChildProcess's 'close'); rejects with
   * CHORUS_ERR_INTERNAL when it could not be started or the spawner died under it.
   */
  readonly closed: Promise<ChildExit>;
  /** SIGKILL (a no-op once it has exited). */
  kill(): void;
}

interface Live {
  /** Its pid, once the spawner has said it started. */
  pid: number | null;
  readonly outputs: readonly Socket[];
  readonly onExit: (exit: ChildExit) => void;
  readonly onError: (err: ChorusError) => void;
}

export class DecoderSpawner {
  static #shared: DecoderSpawner | null = null;

  readonly #child: ChildProcess;
  readonly #server: Server;
  readonly #address = `\0chorus-decoders-${process.pid}-${randomBytes(6).toString('hex')}`;
  readonly #listening: Promise<void>;
  /** Resolvers of connections asked for, in the order asked (one at a time: see #pair). */
  readonly #accepts: ((socket: Socket) => void)[] = [];
  #pairs: Promise<unknown> = Promise.resolve();
  readonly #live = new Map<number, Live>();
  #nextId = 0;
  #dead: ChorusError | null = null;

  /** The process's spawner, started on first use (startDecoderSpawner starts it early, while main is small). */
  static shared(): DecoderSpawner {
    if (!DecoderSpawner.#shared || DecoderSpawner.#shared.#dead) DecoderSpawner.#shared = new DecoderSpawner();
    return DecoderSpawner.#shared;
  }

  private constructor() {
    this.#server = createServer({ pauseOnConnect: true }, (socket) => {
      const accept = this.#accepts.shift();
      if (accept) accept(socket);
      else socket.destroy(); // nobody asked (cannot happen: the name is private to this process's pairs)
    });
    this.#listening = new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#address, () => resolve());
    });
    this.#server.unref();
    // No execArgv: main's (tsx's loader when it runs from source) would double the spawner's size and start time.
    this.#child = fork(ENTRY, [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#child.on('message', (m: FromSpawner) => this.#onMessage(m));
    this.#child.once('exit', (code, signal) => this.#died(`the video decoder spawner exited (${signal ?? code})`));
    this.#child.once('error', (err) => this.#died(`the video decoder spawner failed: ${err.message}`));
    this.#child.unref();
    this.#child.channel?.unref();
  }

  /** The spawner's pid (tests: its decoders are its children). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Starts `file` with `outputCount` output fds (1..n) that main reads; stdin is closed. */
  async spawn(
    file: string,
    args: readonly string[],
    outputCount: number,
    nice: number | null,
  ): Promise<SpawnedDecoder> {
    if (this.#dead) throw this.#dead;
    const pairs: [Socket, Socket][] = [];
    try {
      for (let i = 0; i < outputCount; i++) pairs.push(await this.#pair());
    } catch (err) {
      for (const socket of pairs.flat()) socket.destroy();
      throw new ChorusError(ErrorCodes.INTERNAL, `cannot make a video decoder's pipes: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (this.#dead) throw this.#dead; // it died while the pairs were made
    const id = this.#nextId++;
    const outputs = pairs.map(([mine]) => mine);
    const closed = this.#track(id, outputs);
    // Sent without keepOpen: Node closes main's copy of each child end once it is on its way.
    pairs.forEach(([, theirs], i) => this.#child.send({ type: 'stdio', id, fd: i + 1 } satisfies ToSpawner, theirs));
    this.#child.send({ type: 'spawn', id, file, args, nice } satisfies ToSpawner);
    return { outputs, closed, kill: () => this.#send({ type: 'kill', id }) };
  }

  /** The decode's end: its exit report and every output closed; referenced (the process waits for it) meanwhile. */
  #track(id: number, outputs: readonly Socket[]): Promise<ChildExit> {
    const streamsClosed = Promise.all(outputs.map((s) => new Promise((r) => s.once('close', r))));
    const exited = new Promise<ChildExit>((onExit, onError) =>
      this.#live.set(id, { pid: null, outputs, onExit, onError }),
    );
    if (this.#live.size === 1) this.#child.channel?.ref();
    const done = () => {
      this.#live.delete(id);
      if (this.#live.size === 0) this.#child.channel?.unref();
    };
    exited.then(done, done);
    return exited.then(async (exit) => (await streamsClosed, exit));
  }

  /** A connected pair: [main's end, the child's end]. One at a time, so the n-th connection accepted is ours. */
  #pair(): Promise<[Socket, Socket]> {
    const made = this.#pairs.then(async () => {
      await this.#listening;
      let accept!: (socket: Socket) => void;
      const theirs = new Promise<Socket>((resolve) => this.#accepts.push((accept = resolve)));
      const mine = connect(this.#address);
      await new Promise<void>((resolve, reject) => {
        mine.once('connect', resolve);
        mine.once('error', (err) => {
          this.#accepts.splice(this.#accepts.indexOf(accept), 1); // never connected: no accept will come for it
          reject(err);
        });
      });
      return [mine, await theirs] as [Socket, Socket];
    });
    this.#pairs = made.catch(() => undefined);
    return made;
  }

  #send(message: ToSpawner): void {
    if (!this.#dead && this.#child.connected) this.#child.send(message);
  }

  #onMessage(m: FromSpawner): void {
    const live = this.#live.get(m.id);
    if (!live) return;
    if (m.type === 'spawned') {
      live.pid = m.pid;
      diagnostics.videoDecoder.publish({ event: 'spawned', pid: m.pid });
    } else if (m.type === 'exit') {
      diagnostics.videoDecoder.publish({ event: 'exit', pid: live.pid, code: m.code, signal: m.signal });
      live.onExit({ code: m.code, signal: m.signal });
    } else if (m.type === 'error') {
      for (const s of live.outputs) s.destroy();
      live.onError(new ChorusError(ErrorCodes.INTERNAL, `cannot run the video decoder: ${m.message}`));
    }
  }

  #died(why: string): void {
    if (this.#dead) return;
    this.#dead = new ChorusError(ErrorCodes.INTERNAL, why);
    this.#server.close();
    for (const live of this.#live.values()) {
      for (const s of live.outputs) s.destroy(); // a decoder it left running dies writing to them (EPIPE)
      live.onError(this.#dead);
    }
  }
}

/**
 * Starts the process's decoder spawner now, while main is small (the server calls it at start when its pipeline
 * takes video); a decode before it starts one itself.
 */
export function startDecoderSpawner(): void {
  DecoderSpawner.shared();
}
