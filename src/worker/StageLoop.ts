/**
 * The step loop of one stage process:
 *
 *   drain control (add, abort, pause) -> adapter.processPendingChunks -> core.step (schedule -> execute ->
 *   update -> processors -> adapter.saveAsync) -> yield to the event loop
 *
 * When there is nothing to run, the loop first does its idle work a slice at a time (a kept-warm core's dummy step,
 * IdleWarmth.ts; `idle`: the spans tracing noted, StageSpans), then sleeps on a promise that control messages and
 * chunk arrivals resolve, or a timer set for the core's nextWakeAtMs() (an encoder's partial batch timing out) or its
 * next keep-warm step: no polling interval anywhere.
 * After each step it reads what its inbound edges hold (ChunkTransferAdapter.readNow) and yields with setImmediate so
 * IPC and ring wake-ups are handled between steps (but not after a step that asked for the next at once: a split
 * first prefill's first piece), and it waits while too many sent bytes are still queued (backpressure from full
 * edges reaches the scheduler instead of growing a queue).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import { runQueueWaitMsOf } from '../common/processCpu.ts';
import type { MainToStage, StageToMain } from './messages.ts';
import type { StageCore } from './StageCore.ts';

/** Queued-send bytes above which the loop stops stepping until edges drain. */
const MAX_PENDING_SEND_BYTES = 64 << 20; // 64 MiB

export class StageLoop {
  private control: MainToStage[] = [];
  private wakeUp: (() => void) | null = null;
  private stopping: { drainDeadline: number } | null = null;
  private stopped = false;
  /** The thread's wait for a core so far (ms) when the loop last slept with a keep-warm step ahead; null: unknown. */
  private coreWaitAtSleep: number | null = null;

  constructor(
    private readonly core: StageCore,
    private readonly adapter: ChunkTransferAdapter,
    private readonly post: (msg: StageToMain) => void,
    private readonly log: Logger,
    /** Work for when nothing else is to run, a slice per call; false when there is none left. */
    private readonly idle?: () => boolean,
    /** Told the requests the core holds before each turn's waits (stageMain.ts: whether woken waits are moved). */
    private readonly onLoad?: (requests: number) => void,
  ) {}

  /** Called for every control message (from the IPC channel). */
  deliver(msg: MainToStage): void {
    this.control.push(msg);
    this.wake();
  }

  /** Called by the adapter when a chunk arrives. */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      // An add's receive starts its gets (ChunkTransferAdapter.expect): an input already waiting for it (sent while
      // this stage was in a step) reaches the queue a few promise turns later, and the step after the add would run
      // without it: a newcomer's rows, there since mid-step, waited a whole step more (78 ms beside sixteen
      // omni-sized answers; bench/NOTES.md, "An add's waiting input missed the step after it"). One turn of the event
      // loop hands them in, and reads what the rings hold by then. An add that receives from no upstream (a text-only
      // Thinker's: its prompt is in the add) starts no get, so nothing can be waiting for it: its step runs at once.
      if (this.drainControl()) {
        await this.turn();
        if (this.stopped) break;
      }
      this.core.onArrivals(this.adapter.processPendingChunks());
      if (this.stopping && (this.core.size === 0 || Date.now() >= this.stopping.drainDeadline)) break;
      const didWork = this.core.step();
      this.onLoad?.(this.core.size);
      // A step that asked for the next at once (a split first prefill's first piece: its second is on the first
      // packet's path, and the loop's turn cost it ~0.04 ms at c=1) goes on without the turn: one step a request,
      // at light load only, so what the turn hands in waits at most that one step more.
      if (didWork && this.core.takeContinuation()) continue;
      if (!didWork && this.control.length === 0 && !this.adapter.hasPendingArrivals && !this.idleWork()) {
        await this.sleep();
        continue;
      }
      await this.turn();
      if (this.adapter.pendingSendBytes > MAX_PENDING_SEND_BYTES)
        await this.adapter.whenSendsBelow(MAX_PENDING_SEND_BYTES / 2);
    }
  }

  /**
   * One turn of the event loop, after reading what the inbound edges hold. A step woken by a chunk or a message runs
   * inside the loop's poll phase, and setImmediate's turn then comes before the loop's next look at the rings: a chunk
   * that came during that step waited for the turn, an empty step and a sleep (the Talker's second prefill's rows, on
   * the first packet's path at c=1: 0.52-0.88 ms from its first prefill's end to its second's start, 0.35-0.54 with
   * the read; bench/NOTES.md, "What came during a step"). Read now, its chunk is handed in as the turn's promise
   * turns run, before the step after it.
   */
  private async turn(): Promise<void> {
    this.adapter.readNow();
    await nextTurn();
  }

  /** A slice of idle work: the core's keep-warm step when due (not while stopping), then `idle`'s. */
  private idleWork(): boolean {
    return (!this.stopping && this.core.keepWarm(() => this.coreWaitSinceSleep())) || (this.idle?.() ?? false);
  }

  /** How long this stage waited for a core since it last slept with a keep-warm step ahead (ms; 0 when unknown). */
  private coreWaitSinceSleep(): number {
    const before = this.coreWaitAtSleep;
    const now = before === null ? null : runQueueWaitMsOf(process.pid);
    return before === null || now === null ? 0 : now - before;
  }

  private sleep(): Promise<void> {
    // Wake at the core's next deadline (or keep-warm step), and with a drain in progress at its deadline, even if
    // nothing arrives. A timer that fires early (libuv's clock lags Date.now() by up to a tick) only costs a step that
    // finds nothing due; the core then asks for the same deadline again.
    const keepWarm = this.stopping ? null : this.core.keepWarmWakeAtMs();
    this.coreWaitAtSleep = keepWarm === null ? null : runQueueWaitMsOf(process.pid);
    const deadlines = [this.core.nextWakeAtMs(), keepWarm, this.stopping?.drainDeadline].filter(
      (d): d is number => typeof d === 'number',
    );
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      this.wakeUp = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
      if (deadlines.length > 0) timer = setTimeout(() => this.wake(), Math.max(0, Math.min(...deadlines) - Date.now()));
    });
  }

  /** Handles the control messages queued; true when one was an add that receives from an upstream. */
  private drainControl(): boolean {
    const batch = this.control;
    this.control = [];
    let added = false;
    for (const msg of batch) {
      added ||= msg.type === 'add' && msg.upstreams.length > 0;
      try {
        this.handle(msg);
      } catch (err) {
        if ('requestId' in msg && typeof msg.requestId === 'string') {
          this.post({
            type: 'finished',
            requestId: msg.requestId,
            finishReason: 'error',
            numTokens: 0,
            error: serializeError(err),
          });
        } else {
          this.log.error({ err }, 'control message failed');
        }
      }
    }
    return added;
  }

  private handle(msg: MainToStage): void {
    switch (msg.type) {
      case 'add':
        if (this.stopping)
          throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'stage is shutting down; retry on another server');
        this.core.add(msg);
        return;
      case 'abort':
        this.core.abort(msg.requestId);
        return;
      case 'pause':
        this.core.pause(msg.requestId);
        return;
      case 'resume':
        this.core.resume(msg.requestId);
        return;
      case 'kind':
        this.core.onKindMessage(msg.requestId, msg.body);
        return;
      case 'shutdown':
        this.stopping = { drainDeadline: Date.now() + msg.drainMs };
        return;
      case 'drop_all': {
        const dropped = this.core.dropAll();
        if (dropped.length > 0) this.log.warn({ dropped, reason: msg.reason }, 'dropped every request held');
        return;
      }
      case 'boot': // only the first message of a process; the process entry consumed it
        return;
      default: {
        const unknown: never = msg;
        throw new ChorusError(ErrorCodes.INTERNAL, `unknown control message ${JSON.stringify(unknown)}`);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.wake();
  }
}
