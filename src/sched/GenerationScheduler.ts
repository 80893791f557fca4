/**
 * Scheduler for one-shot generation stages (Code2Wav): every request with a ready chunk is a candidate; a step
 * batches up to maxNumSeqs of them, one chunk per request (a request's chunks must be decoded in order). Pure: the
 * core tells it when chunks arrive and are consumed.
 *
 * Policy fifo: oldest ready chunk first. Policy playback (playback.ts): least slack first, and a chunk joins the
 * batch only while the batch's estimated decode time stays within the deadline of every more urgent chunk in it
 * (a batch of sixteen 2 s chunks takes long enough to starve a listener waiting on a small one).
 */
import {
  byDeadline,
  stepBoundMs,
  unitsWithinBound,
  type ScheduleClock,
  type SchedulingPolicy,
  type StepCost,
} from './playback.ts';

export interface GenerationItem {
  readonly requestId: string;
}

interface ReadyRequest {
  /** Work units (codec frames) of each ready chunk, in order. */
  readonly units: number[];
  /** When the oldest ready chunk became ready, for FIFO fairness. */
  arrival: number;
}

export class GenerationScheduler {
  private readonly ready = new Map<string, ReadyRequest>();
  private readonly paused = new Set<string>();
  private readonly deadlines = new Map<string, number>();
  private clock = 0;

  constructor(
    private readonly maxNumSeqs: number,
    private readonly policy: SchedulingPolicy = 'fifo',
  ) {
    if (maxNumSeqs < 1) throw new RangeError('maxNumSeqs must be >= 1');
  }

  /** A chunk of `units` work (codec frames, context included) is ready. */
  chunkArrived(requestId: string, units = 1): void {
    const r = this.ready.get(requestId);
    if (r) r.units.push(units);
    else this.ready.set(requestId, { units: [units], arrival: this.clock++ });
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

  schedule(clock?: ScheduleClock): GenerationItem[] {
    const playback = this.policy === 'playback' && clock ? clock : null;
    const deadline = (c: { requestId: string }): number => this.deadlines.get(c.requestId) ?? Infinity;
    const candidates = [...this.ready.entries()]
      .filter(([id]) => !this.paused.has(id))
      .map(([requestId, r]) => ({ requestId, arrival: r.arrival, units: r.units[0] }))
      .sort(playback ? byDeadline<{ requestId: string; arrival: number }>(deadline) : (a, b) => a.arrival - b.arrival);
    if (!playback) return candidates.slice(0, this.maxNumSeqs).map(({ requestId }) => ({ requestId }));
    return this.fitBatch(candidates, playback.nowMs, playback.cost, deadline);
  }

  /** One chunk of each item was consumed; a request with more ready chunks goes to the back of the line. */
  update(items: readonly GenerationItem[]): void {
    for (const { requestId } of items) {
      const r = this.ready.get(requestId);
      if (!r) continue;
      r.units.shift();
      if (r.units.length === 0) this.ready.delete(requestId);
      else r.arrival = this.clock++;
    }
  }

  /** Most urgent first; each further chunk only if the batch still decodes within every included deadline. */
  private fitBatch(
    candidates: readonly { requestId: string; units: number }[],
    nowMs: number,
    cost: StepCost,
    deadline: (c: { requestId: string }) => number,
  ): GenerationItem[] {
    const batch: GenerationItem[] = [];
    let units = 0;
    let boundMs = Infinity;
    for (const c of candidates) {
      if (batch.length === this.maxNumSeqs) break;
      if (batch.length > 0 && unitsWithinBound(cost, units, c.units, boundMs) < c.units) continue;
      batch.push({ requestId: c.requestId });
      units += c.units;
      boundMs = Math.min(boundMs, stepBoundMs({ deadlineMs: deadline(c), stepsNeeded: 1 }, nowMs));
    }
    return batch;
  }
}
