/**
 * Scheduler for one-shot generation stages (Code2Wav): every request with a ready chunk is a candidate; a step
 * batches up to maxNumSeqs of them, one chunk per request (a request's chunks must be decoded in order). Pure: the
 * core tells it when chunks arrive and are consumed. Nothing is held between steps: a paused request (its client is
 * not reading) is left out of the candidates, so it never takes a batch position from the others, and its chunks wait.
 *
 * Policy fifo: oldest ready chunk first. Policy playback (playback.ts): least slack first.
 */
import { byDeadline, type SchedulingPolicy } from './playback.ts';

export interface GenerationItem {
  readonly requestId: string;
}

export class GenerationScheduler {
  /** requestId -> number of ready chunks, plus when the oldest became ready (for FIFO fairness). */
  private readonly ready = new Map<string, { count: number; arrival: number }>();
  private readonly paused = new Set<string>();
  private readonly deadlines = new Map<string, number>();
  private clock = 0;

  constructor(
    private readonly maxNumSeqs: number,
    private readonly policy: SchedulingPolicy = 'fifo',
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
  }

  /** Requests with at least one ready chunk (the queue depth reported for load-aware chunking). */
  get queueDepth(): number {
    return this.ready.size;
  }

  /** `nowMs` (epoch ms): the playback policy's notion of now (deadlines before it are overdue). */
  schedule(nowMs = Date.now()): GenerationItem[] {
    const deadline = (c: { requestId: string }): number => this.deadlines.get(c.requestId) ?? Infinity;
    return [...this.ready.entries()]
      .filter(([id]) => !this.paused.has(id))
      .map(([requestId, r]) => ({ requestId, arrival: r.arrival }))
      .sort(
        this.policy === 'playback'
          ? byDeadline<{ requestId: string; arrival: number }>(deadline, nowMs)
          : (a, b) => a.arrival - b.arrival,
      )
      .slice(0, this.maxNumSeqs)
      .map(({ requestId }) => ({ requestId }));
  }

  /** One chunk of each item was consumed; a request with more ready chunks goes to the back of the line. */
  update(items: readonly GenerationItem[]): void {
    for (const { requestId } of items) {
      const r = this.ready.get(requestId);
      if (!r) continue;
      if (--r.count === 0) this.ready.delete(requestId);
      else r.arrival = this.clock++;
    }
  }
}
