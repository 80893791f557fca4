/**
 * A server the bench starts for --config, in a process of its own (serverProcessEntry.ts), as a deployment runs
 * `chorus serve`: main there, its stage processes its children. In the bench's own process (inProcessServer.ts),
 * two modes' mains, the bench's clients and the limit's runners shared one heap, one compiler and one event loop:
 * on one host each block of a mode started ~4-5 ms slower than the rest of its answers at c=1, ~0.3-2.5 ms with the
 * two servers in `chorus serve` processes (bench/NOTES.md, "Block starts: the two servers' mains in one process"),
 * though not on a slower one ("Each bench server in a process of its own").
 * What the bench reads off main (its packet marks for the first packet's account, the server-side first-packet
 * times) is collected after each block; main's CPU is read off the process like a stage's (cpuTime.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { ChorusError, ErrorCodes, type PacketMark } from '../../src/basics.ts';
import { loaderFlagsFor, moduleFile } from '../../src/index.ts';
import type { BenchConfig, InProcessServerOptions } from './inProcessServer.ts';
import { spawnedChannel } from './RemoteStageHost.ts';
import type { FromServer, ToServer } from './serverProcessProtocol.ts';
import type { ServerSideTiming } from './ServerTimings.ts';

const ENTRY = moduleFile('./serverProcessEntry', import.meta.url).pathname;

/** How long a server process may take to stop its stages once asked, before it is killed. */
const CLOSE_TIMEOUT_MS = 30_000;

/** What main heard of a block's requests. */
export interface ServerSide {
  readonly marks: readonly PacketMark[];
  readonly timings: ReadonlyMap<string, ServerSideTiming>;
}

export interface ServerProcessOptions extends InProcessServerOptions {
  /** Hear main's packet marks (the first packet's account). */
  readonly marks: boolean;
}

export class ServerProcess {
  #waiting: { resolve: (msg: FromServer) => void; reject: (err: Error) => void } | null = null;
  #exited: Error | null = null;

  private constructor(
    private readonly child: ChildProcess,
    private readonly exit: Promise<void>,
    /** Where its front end listens. */
    readonly baseUrl: string,
    /** Where its remote stages run (null when all are local). */
    readonly remote: string | null,
  ) {}

  /** Main's pid: its CPU is read off /proc like a stage process's. */
  get pid(): number {
    return this.child.pid!;
  }

  static async start(config: BenchConfig, options: ServerProcessOptions): Promise<ServerProcess> {
    const { compiled, marks, ...hostOptions } = options;
    const env = { ...process.env };
    // The stage processes start from dist/ or through tsx as asked (main here runs as the bench does).
    if (compiled === true) env.CHORUS_COMPILED = '1';
    else if (compiled === false) delete env.CHORUS_COMPILED;
    const child = fork(ENTRY, [], {
      execArgv: loaderFlagsFor(ENTRY),
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exit = once(child, 'exit').then(() => undefined);
    const messages = messagesOf(child);
    try {
      await messages.next('booted');
      const start: ToServer = { type: 'start', text: config.text, file: config.file, marks, options: hostOptions };
      child.send(start);
      const ready = await messages.next('ready');
      const server = new ServerProcess(child, exit, ready.baseUrl, ready.remote);
      messages.handOver(server);
      return server;
    } catch (err) {
      // A server that failed to start has stopped what it started and exits on its own; anything else is killed.
      if (!messages.failed) child.kill('SIGKILL');
      await exitWithin(child, exit);
      throw err;
    }
  }

  /** Main's marks and server-side times of these requests, collected after their block. */
  async collect(requestIds: readonly string[]): Promise<ServerSide> {
    const msg = await this.#ask({ type: 'collect', requestIds }, 'collected');
    return { marks: msg.marks, timings: new Map(msg.timings) };
  }

  /** Stops the server (its stages first); killed if it has not exited within CLOSE_TIMEOUT_MS. */
  async close(): Promise<void> {
    if (this.#exited) return;
    if (this.child.connected) this.child.send({ type: 'close' } satisfies ToServer);
    await exitWithin(this.child, this.exit);
  }

  /** @internal messagesOf hands each message and the exit to the live server. */
  onMessage(msg: FromServer): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.resolve(msg);
  }

  /** @internal */
  onExit(err: Error): void {
    this.#exited = err;
    this.#waiting?.reject(err);
    this.#waiting = null;
  }

  #ask<T extends FromServer['type']>(msg: ToServer, answer: T): Promise<Extract<FromServer, { type: T }>> {
    if (this.#exited) return Promise.reject(this.#exited);
    if (this.#waiting) return Promise.reject(new Error('one question at a time to a bench server process'));
    return new Promise((resolve, reject) => {
      this.#waiting = {
        resolve: (got) =>
          got.type === answer ? resolve(got as Extract<FromServer, { type: T }>) : reject(unexpected(got)),
        reject,
      };
      this.child.send(msg);
    });
  }
}

/** Waits for `exit`, killing the child if it has not exited within CLOSE_TIMEOUT_MS. */
async function exitWithin(child: ChildProcess, exit: Promise<void>): Promise<void> {
  const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
  try {
    await exit;
  } finally {
    clearTimeout(timer);
  }
}

/** The server process's messages in order while it starts, then handed to the ServerProcess. */
function messagesOf(child: ChildProcess) {
  const queue: FromServer[] = [];
  let wake: (() => void) | null = null;
  let exited: Error | null = null;
  let live: ServerProcess | null = null;
  let failed = false;
  // A message sent as the process goes away fails here; its 'exit' follows and fails whatever waits for an answer.
  child.on('error', () => undefined);
  child.on('message', (msg: FromServer) => {
    if (msg.type === 'spawned') return void spawnedChannel.publish(msg.process);
    if (msg.type === 'failed') failed = true;
    if (live) return live.onMessage(msg);
    queue.push(msg);
    wake?.();
  });
  child.once('exit', (code, signal) => {
    exited = new ChorusError(
      ErrorCodes.STAGE_FAILED,
      `the bench's server process exited (code ${code}, signal ${signal}); its log lines above say why`,
    );
    live?.onExit(exited);
    wake?.();
  });
  return {
    /** Whether the server said it failed to start. */
    get failed(): boolean {
      return failed;
    },
    async next<T extends FromServer['type']>(type: T): Promise<Extract<FromServer, { type: T }>> {
      while (queue.length === 0) {
        if (exited) throw exited;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
      const msg = queue.shift()!;
      if (msg.type === type) return msg as Extract<FromServer, { type: T }>;
      throw unexpected(msg);
    },
    handOver(server: ServerProcess): void {
      live = server;
    },
  };
}

/** A server that failed to start says why (with its error's code); anything else out of turn is the bench's bug. */
function unexpected(msg: FromServer): Error {
  if (msg.type === 'failed') return new ChorusError(msg.code ?? ErrorCodes.INTERNAL, msg.message);
  return new ChorusError(ErrorCodes.INTERNAL, `the bench's server process answered ${msg.type} out of turn`);
}
