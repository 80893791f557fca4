/**
 * Scheduler for one-shot generation stages (Code2Wav): every request with a ready chunk is a candidate; a step
 * batches up to maxNumSeqs of them, oldest chunk first, one chunk per request (a request's chunks must be decoded
 * in order). Pure: the core tells it when chunks arrive and are consumed.
 */
export interface GenerationItem {
  readonly requestId: string;
}

export class GenerationScheduler {
  /** requestId -> number of ready chunks, plus when the oldest became ready (for FIFO fairness). */
  private readonly ready = new Map<string, { count: number; since: number }>();
  private readonly paused = new Set<string>();
  private clock = 0;

  constructor(private readonly maxNumSeqs: number) {
    if (maxNumSeqs < 1) throw new RangeError('maxNumSeqs must be >= 1');
  }

  chunkArrived(requestId: string): void {
    const r = this.ready.get(requestId);
    if (r) r.count++;
    else this.ready.set(requestId, { count: 1, since: this.clock++ });
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
  }

  /** Requests with at least one ready chunk (the queue depth reported for load-aware chunking). */
  get queueDepth(): number {
    return this.ready.size;
  }

  schedule(): GenerationItem[] {
    const candidates = [...this.ready.entries()]
      .filter(([id]) => !this.paused.has(id))
      .sort((a, b) => a[1].since - b[1].since)
      .slice(0, this.maxNumSeqs);
    return candidates.map(([requestId]) => ({ requestId }));
  }

  /** One chunk of each item was consumed; a request with more ready chunks goes to the back of the line. */
  update(items: readonly GenerationItem[]): void {
    for (const { requestId } of items) {
      const r = this.ready.get(requestId);
      if (!r) continue;
      if (--r.count === 0) this.ready.delete(requestId);
      else r.since = this.clock++;
    }
  }
}
