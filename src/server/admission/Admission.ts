/**
 * Caps concurrent client work (realtime sessions plus in-flight HTTP completions) at maxSessions, and keeps
 * the chorus_active_sessions gauge. acquire() returns an idempotent release.
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { serverMetrics } from '../metrics/metrics.ts';
import type { Protocol } from '../metrics/LatencyMeter.ts';

export class Admission {
  readonly #max: number;
  #active = 0;

  constructor(maxSessions: number) {
    this.#max = maxSessions;
  }

  get active(): number {
    return this.#active;
  }

  get full(): boolean {
    return this.#active >= this.#max;
  }

  /** Throws RATE_LIMITED (429) when full. */
  acquire(protocol: Protocol): () => void {
    if (this.full) {
      throw new ChorusError(
        ErrorCodes.RATE_LIMITED,
        `the server is at its limit of ${this.#max} concurrent sessions: retry after the Retry-After seconds`,
      );
    }
    this.#active++;
    serverMetrics.activeSessions.inc({ protocol });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      serverMetrics.activeSessions.dec({ protocol });
    };
  }
}
