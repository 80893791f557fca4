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
  private constructor(
    private readonly child: ChildProcess,
    private readonly messages: Messages,
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
    const messages = new Messages(child);
    try {
      await messages.next('booted');
      const start: ToServer = { type: 'start', text: config.text, file: config.file, marks, options: hostOptions };
      child.send(start);
      const ready = await messages.next('ready');
      return new ServerProcess(child, messages, exit, ready.baseUrl, ready.remote);
    } catch (err) {
      // A server that failed to start has stopped what it started and exits on its own; anything else is killed.
      if (!messages.failed) child.kill('SIGKILL');
      await exitWithin(child, exit);
      throw err;
    }
  }

  /** Main's marks and server-side times of these requests, collected after their block (one block at a time). */
  async collect(requestIds: readonly string[]): Promise<ServerSide> {
    this.messages.throwIfExited();
    this.child.send({ type: 'collect', requestIds } satisfies ToServer);
    const msg = await this.messages.next('collected');
    return { marks: msg.marks, timings: new Map(msg.timings) };
  }

  /** Stops the server (its stages first); killed if it has not exited within CLOSE_TIMEOUT_MS. */
  async close(): Promise<void> {
    if (this.child.connected) this.child.send({ type: 'close' } satisfies ToServer);
    await exitWithin(this.child, this.exit);
  }
}

/** Waits for `exit`, killing the child if it has not exited within CLOSE_TIMEOUT_MS. */
async function exitWithin(child: ChildProcess, exit: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
  try {
    await exit;
  } finally {
    clearTimeout(timer);
  }
}

/** The server process's answers in order (the bench asks one thing at a time), and its exit. */
class Messages {
  readonly #queue: FromServer[] = [];
  #wake: (() => void) | null = null;
  #exited: Error | null = null;
  /** Whether the server said it failed to start. */
  failed = false;

  constructor(child: ChildProcess) {
    // A message sent as the process goes away fails here; its 'exit' follows and fails whatever waits for an answer.
    child.on('error', () => undefined);
    child.on('message', (msg: FromServer) => {
      if (msg.type === 'spawned') return void spawnedChannel.publish(msg.process);
      if (msg.type === 'failed') this.failed = true;
      this.#queue.push(msg);
      this.#wake?.();
    });
    child.once('exit', (code, signal) => {
      this.#exited = new ChorusError(
        ErrorCodes.STAGE_FAILED,
        `the bench's server process exited (code ${code}, signal ${signal}); its log lines above say why`,
      );
      this.#wake?.();
    });
  }

  throwIfExited(): void {
    if (this.#exited) throw this.#exited;
  }

  /** The next answer, which must be of `type` (a failure to start is thrown as the server's error). */
  async next<T extends FromServer['type']>(type: T): Promise<Extract<FromServer, { type: T }>> {
    while (this.#queue.length === 0) {
      this.throwIfExited();
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = null;
    }
    const msg = this.#queue.shift()!;
    if (msg.type === type) return msg as Extract<FromServer, { type: T }>;
    throw unexpected(msg);
  }
}

/** A server that failed to start says why (with its error's code); anything else out of turn is the bench's bug. */
function unexpected(msg: FromServer): Error {
  if (msg.type === 'failed') return new ChorusError(msg.code ?? ErrorCodes.INTERNAL, msg.message);
  return new ChorusError(ErrorCodes.INTERNAL, `the bench's server process answered ${msg.type} out of turn`);
}
