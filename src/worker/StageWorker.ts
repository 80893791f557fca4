/**
 * Main-side supervisor of one stage process (mediasoup Worker / piscina style). start() forks the process, sends
 * boot, and resolves on READY; a boot failure (or exit before READY) rejects with CHORUS_ERR_STAGE_BOOT carrying
 * the stage's own error. After READY, an unexpected exit emits 'died'; the Orchestrator decides what to fail and
 * whether to restart. The process is a child, not a worker thread: terminating a thread inside onnxruntime aborts
 * the whole server, killing a child is safe.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { onDeadline } from '../common/deadline.ts';
import { ChorusError, deserializeError, ErrorCodes } from '../common/errors.ts';
import { loaderFlagsFor } from '../common/moduleFile.ts';
import { addon } from '../../transport/shm/binding.ts';
import { LIGHT_LOAD_MAX_LIVE } from '../sched/chunkPolicy.ts';
import type { Logger } from '../common/log.ts';
import type { ControlChannel } from './ControlChannel.ts';
import {
  MAX_CONTROL_MESSAGE_BYTES,
  type MainToStage,
  type StageBootArgs,
  type StageReadySettings,
  type StageToMain,
} from './messages.ts';

/** The old generation may grow to 4x what the last mark-compact kept: every stage process, and main (mainHeap.ts). */
export const HEAP_GROWING_FLAG = '--heap-growing-percent=300';

/**
 * Node flags of every stage process. `--single-threaded-gc`: V8's garbage collector works on the stage's own thread
 * instead of four helper threads beside it. A stage allocates per step (onnxruntime's outputs), and its helpers'
 * collections ran beside the other stages on the same few cores: at c=10 on 2 cores they took 17% of the stages'
 * CPU; without them, req/s +9% and TTFP -14% there, c=1 unchanged (bench/README.md, "Garbage collection on the
 * stage's own thread"). `--heap-growing-percent=300`: the old generation may grow to 4x what the last mark-compact
 * kept before the next one (V8 chose ~1.3x for a stage's ~17 MB heap: a mark-compact every ~0.4 s at c=10, each
 * ~15-25 ms of marking on that one thread); a stage's heap is small, so 4x costs tens of MB (bench/NOTES.md, "A
 * stage's heap may grow 4x; prefix-cache entries in regions their size").
 */
export const STAGE_NODE_FLAGS: readonly string[] = ['--single-threaded-gc', HEAP_GROWING_FLAG];

/**
 * Whether a stage reading this add starts computing at once, on a lightly loaded server: the entry stage's add with
 * its prompt and no upstream to wait for. Main keeps that stage off its own core while the add wakes it
 * (native/src/ring.cc KeepOffThisCore, as a ring's producer does for the reader it wakes): a kernel that packs
 * wake-ups queued the Thinker on main's core, where it waited for main's turn after the add (the response's first
 * events) while the other core idled (the add's hop 0.61-0.87 ms against 0.41-0.59 moved; docs/operations.md, "Woken
 * stages moved off their waker's core"). Busier, both cores have work and a move only trades which task waits; a
 * stage that waits for its input first (the Talker, an encoder's consumer) is woken again by it, and its ring moves
 * it then.
 */
export function startsAtOnce(add: Extract<MainToStage, { type: 'add' }>): boolean {
  return add.upstreams.length === 0 && (add.liveRequests ?? Number.POSITIVE_INFINITY) <= LIGHT_LOAD_MAX_LIVE;
}

/** How main sends a message to a stage, beyond the message. */
export interface StageSendOptions {
  /**
   * The message wakes the stage to compute at once on a lightly loaded server (a held Thinker's release): a stage
   * process on this machine is kept off main's core while the send wakes it (src/worker/StageWorker.ts), as an add
   * that starts a model at once is. Another machine's instance ignores it.
   */
  readonly computesAtOnce?: boolean;
}

export interface StageWorkerOptions {
  /** The module the stage process runs (it calls runStageProcess; stages/stageEntry.ts in Chorus). */
  readonly entry: string;
  /** Main's end of the child's control channel (src/control/ipc: the IPC pipe); the worker knows the interface only. */
  readonly channelOf: (child: ChildProcess) => ControlChannel<MainToStage, StageToMain>;
  readonly bootTimeoutMs?: number;
}

export interface StageWorkerEvents {
  message: [StageToMain];
  died: [{ code: number | null; signal: NodeJS.Signals | null }];
}

export class StageWorker extends EventEmitter<StageWorkerEvents> {
  private exited = false;
  private readonly exitPromise: Promise<void>;
  settings: StageReadySettings | null = null;

  private constructor(
    private readonly child: ChildProcess,
    private readonly channel: ControlChannel<MainToStage, StageToMain>,
    readonly instance: string,
    private readonly log: Logger,
  ) {
    super();
    this.exitPromise = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get pid(): number | null {
    return this.exited ? null : (this.child.pid ?? null);
  }

  get alive(): boolean {
    return !this.exited;
  }

  static start(args: StageBootArgs, log: Logger, options: StageWorkerOptions): Promise<StageWorker> {
    const bootTimeoutMs = options.bootTimeoutMs ?? 300_000; // 5 min: a first boot may build the models
    const spec = args.graph.stages[args.stageIndex];
    const instance = `${spec.stageId}#${args.replica}`;
    const child = fork(options.entry, [instance], {
      execArgv: [...loaderFlagsFor(options.entry), ...STAGE_NODE_FLAGS],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, CHORUS_STAGE: instance },
    });
    const channel = options.channelOf(child);
    const worker = new StageWorker(child, channel, instance, log.child({ stage: instance }));
    return new Promise<StageWorker>((resolve, reject) => {
      // After the poll: a READY that reached main's pipe in time, behind a stall of main's, is read first.
      const cancelTimer = onDeadline(Date.now() + bootTimeoutMs, () => {
        fail(
          new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${instance} did not become ready within ${bootTimeoutMs} ms`),
        );
        child.kill('SIGKILL');
      });
      const fail = (err: ChorusError) => {
        cancelTimer();
        unsubscribe();
        reject(err);
      };
      child.once('exit', (code, signal) => {
        worker.exited = true;
        if (!worker.settings)
          fail(
            new ChorusError(
              ErrorCodes.STAGE_BOOT,
              `stage ${instance} exited before it was ready (code ${code}, signal ${signal})`,
            ),
          );
        else worker.emit('died', { code, signal });
      });
      child.once('error', (err) =>
        fail(
          new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${instance} could not start: ${err.message}`, { cause: err }),
        ),
      );
      const unsubscribe = channel.onMessage((msg) => {
        if (worker.settings) {
          worker.emit('message', msg);
          return;
        }
        if (msg.type === 'ready') {
          cancelTimer();
          worker.settings = msg.settings;
          resolve(worker);
        } else if (msg.type === 'boot_failed') {
          const cause = deserializeError(msg.error);
          fail(
            new ChorusError(
              ErrorCodes.STAGE_BOOT,
              `stage ${instance} failed to boot: ${cause.code}: ${cause.message}`,
              { cause },
            ),
          );
        }
      });
      worker.send({ type: 'boot', ...args });
    });
  }

  send(msg: MainToStage, opts: StageSendOptions = {}): void {
    if (this.exited) return; // a dead stage's requests are failed by the 'died' handler
    // An add too big for the control channel fails the request here, not the channel: the kind's arguments (a
    // long prompt) are what grows. Measured as the channel would carry them.
    if (msg.type === 'add') {
      const argsBytes = JSON.stringify(msg.args ?? null).length;
      if (argsBytes > MAX_CONTROL_MESSAGE_BYTES)
        throw new ChorusError(
          ErrorCodes.REQUEST_TOO_LARGE,
          `request ${msg.requestId}: its ${argsBytes} bytes of stage arguments are too large for one request`,
        );
    }
    const pid = this.child.pid;
    // A stage this message wakes to compute at once (the entry stage's add, a held Thinker's release) goes to another
    // core than main's: kept off it while the send wakes it (moved after, it had often run on main's core already,
    // and held main's core through its step while the other idled: docs/operations.md).
    const computes = opts.computesAtOnce === true || (msg.type === 'add' && startsAtOnce(msg));
    if (computes && pid !== undefined) addon.wakeOffThisCore(pid, () => this.channel.send(msg));
    else this.channel.send(msg);
  }

  /** Asks the stage to drain (up to drainMs) and exit; kills it if it has not exited by then + a grace period. */
  async shutdown(drainMs: number, graceMs = 5_000): Promise<void> {
    if (this.exited) return;
    this.removeAllListeners('died'); // an exit we asked for is not a death
    this.send({ type: 'shutdown', drainMs });
    const timer = setTimeout(() => this.kill(), drainMs + graceMs);
    await this.exitPromise;
    clearTimeout(timer);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (!this.exited) this.child.kill(signal);
  }

  waitForExit(): Promise<void> {
    return this.exitPromise;
  }
}
