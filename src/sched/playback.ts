/**
 * Playback-aware scheduling: the pieces the Talker and Code2Wav schedulers share. Pure: times are passed in.
 *
 * A stream's listener plays audio as it arrives; what matters for each request is when its buffered audio runs
 * out (its deadline), not when it arrived. A stage models that from its own side: the first packet is due by the
 * request's TTFP target (or DEFAULT_FIRST_PACKET_SLACK_MS after admission when it has none), and once audio flows
 * the buffer runs dry at `first sent + audio sent` (the listener started playing when the first packet left).
 * Schedulers order work by that deadline, least slack first: when a step cannot take every ready request (its
 * sequence or token budget is full), the listeners closest to running dry go first.
 */
import type { SchedulingPolicy } from '../common/graph.ts';

export type { SchedulingPolicy };

/**
 * Without a TTFP target, a new request's first packet is scheduled as if its listener had this much audio
 * buffered at admission: it goes before streams with more audio left, after those about to run dry.
 */
export const DEFAULT_FIRST_PACKET_SLACK_MS = 250;

/** Exponentially weighted mean of a latency as it is observed (null before the first observation). */
export class Ewma {
  private mean: number | null = null;

  constructor(private readonly weight = 0.2) {}

  observe(x: number): void {
    if (!Number.isFinite(x)) return;
    this.mean = this.mean === null ? x : this.mean + this.weight * (x - this.mean);
  }

  get value(): number | null {
    return this.mean;
  }
}

/**
 * Orders by deadline (least slack first), then by arrival; requests without a deadline last, by arrival. Deadlines
 * already past count as `nowMs`: overdue requests keep their arrival order among themselves instead of the most
 * overdue always going first, so an overloaded stage degrades to fifo rather than to the domino effect of
 * earliest-deadline-first under overload (every listener late, none served in turn).
 */
export function byDeadline<T extends { readonly arrival: number }>(
  deadline: (t: T) => number,
  nowMs: number,
): (a: T, b: T) => number {
  const key = (t: T) => Math.max(deadline(t), nowMs);
  return (a, b) => key(a) - key(b) || a.arrival - b.arrival;
}
