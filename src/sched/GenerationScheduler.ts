/**
 * Scheduler for one-shot generation stages (Code2Wav): every request with a ready chunk is a candidate; a step
 * batches up to maxNumSeqs of them, one chunk per request (a request's chunks must be decoded in order). Pure: the
 * core tells it when chunks arrive and are consumed. Nothing is held between steps: a paused request (its client is
 * not reading) is left out of the candidates, so it never takes a batch position from the others, and its chunks wait.
 *
 * Policy fifo: oldest ready chunk first. Policy playback (playback.ts): least slack first.
 *
 * First chunks first (`firstChunksFirst`, Code2Wav; issue 41 item 5): when requests whose first chunk has not been
 * decoded wait beside others with chunks ready, the first chunks run in a step of their own, ahead of the others
 * whatever the policy; after FIRST_CHUNK_RUN_STEPS such steps in a row one step goes by the policy, so a stream of
 * newcomers never starves the others. Beside sixteen long
 * answers a newcomer's first chunk (2 frames) joined the back of the line and a batch of sixteen 25-frame chunks:
 * its first audio waited for that step, and under fifo for the one before it when the batch was full; alone it is a
 * step of 2 frames, and the long answers, seconds of audio ahead, lose that short step.
 */
import { byDeadline, type SchedulingPolicy } from './playback.ts';

/** First chunks first: at most this many steps in a row run only first chunks while others wait. */
const FIRST_CHUNK_RUN_STEPS = 4;

const NONE: ReadonlySet<string> = new Set();

export interface GenerationItem {
  readonly requestId: string;
}

export class GenerationScheduler {
  /** requestId -> number of ready chunks, plus when the oldest became ready (for FIFO fairness). */
  private readonly ready = new Map<string, { count: number; arrival: number }>();
  private readonly paused = new Set<string>();
  private readonly deadlines = new Map<string, number>();
  private clock = 0;
  /** Requests whose first chunk was decoded (first chunks first). */
  private readonly started = new Set<string>();
  /** Steps in a row that ran only first chunks while others had chunks ready. */
  private firstRun = 0;

  constructor(
    private readonly maxNumSeqs: number,
    private readonly policy: SchedulingPolicy = 'fifo',
    private readonly firstChunksFirst = false,
  ) {
    if (maxNumSeqs < 1) throw new RangeError('maxNumSeqs must be >= 1');
  }

  chunkArrived(requestId: string): void {
    const r = this.ready.get(requestId);
    if (r) r.count++;
    else this.ready.set(requestId, { count: 1, arrival: this.clock++ });
  }

  /** Playback policy: when the request's next chunk must be out (epoch ms); null: no deadline (served last). */
  setDeadline(requestId: string, deadlineMs: number | null): void {
    if (deadlineMs === null) this.deadlines.delete(requestId);
    else this.deadlines.set(requestId, deadlineMs);
  }

  pause(requestId: string): void {
    this.paused.add(requestId);
  }

  resume(requestId: string): void {
    this.paused.delete(requestId);
  }

  remove(requestId: string): void {
    this.ready.delete(requestId);
    this.paused.delete(requestId);
    this.deadlines.delete(requestId);
    this.started.delete(requestId);
  }

  /** Requests with at least one ready chunk (the queue depth reported for load-aware chunking). */
  get queueDepth(): number {
    return this.ready.size;
  }

  /**
   * `nowMs` (epoch ms): the playback policy's notion of now (deadlines before it are overdue). `deferred`: requests
   * left out of this step, their chunks kept (first audio first, FirstAudioFirst.ts).
   */
  schedule(nowMs = Date.now(), deferred: ReadonlySet<string> = NONE): GenerationItem[] {
    const deadline = (c: { requestId: string }): number => this.deadlines.get(c.requestId) ?? Infinity;
    const ordered = [...this.ready.entries()]
      .filter(([id]) => !this.paused.has(id) && !deferred.has(id))
      .map(([requestId, r]) => ({ requestId, arrival: r.arrival }))
      .sort(
        this.policy === 'playback'
          ? byDeadline<{ requestId: string; arrival: number }>(deadline, nowMs)
          : (a, b) => a.arrival - b.arrival,
      );
    const take = (items: readonly { requestId: string }[]): GenerationItem[] =>
      items.slice(0, this.maxNumSeqs).map(({ requestId }) => ({ requestId }));
    if (!this.firstChunksFirst) return take(ordered);
    const first = ordered.filter((c) => !this.started.has(c.requestId));
    const others = ordered.filter((c) => this.started.has(c.requestId));
    const alone = first.length > 0 && others.length > 0 && this.firstRun < FIRST_CHUNK_RUN_STEPS;
    this.firstRun = alone ? this.firstRun + 1 : 0;
    return take(alone ? first : ordered); // after a run of first chunks, the policy's order: nobody starves
  }

  /** One chunk of each item was consumed; a request with more ready chunks goes to the back of the line. */
  update(items: readonly GenerationItem[]): void {
    for (const { requestId } of items) {
      const r = this.ready.get(requestId);
      if (!r) continue;
      this.started.add(requestId);
      if (--r.count === 0) this.ready.delete(requestId);
      else r.arrival = this.clock++;
    }
  }
}
