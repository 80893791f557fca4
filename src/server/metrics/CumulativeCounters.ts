/**
 * Stage processes report totals since they started (cache hits so far...); Prometheus counters want increments,
 * and must never go down. This turns each (instance, field) series of totals into increments: the first total
 * seen counts whole (the process counted it since it started), and a total that drops means the process was
 * restarted and counts from zero again, so the new total counts whole too. Pure: no I/O, no clocks.
 */
export class CumulativeCounters {
  readonly #last = new Map<string, number>();

  /** The increment that `total` (cumulative since `instance` started) adds to the `field` counter. */
  increment(instance: string, field: string, total: number): number {
    if (!Number.isFinite(total) || total < 0) return 0;
    const key = `${instance}\u0000${field}`;
    const previous = this.#last.get(key);
    this.#last.set(key, total);
    if (previous === undefined || total < previous) return total;
    return total - previous;
  }

  /** The instance's process is gone: its next report starts a new series (even if it is not lower yet). */
  restart(instance: string): void {
    const prefix = `${instance}\u0000`;
    for (const key of [...this.#last.keys()]) if (key.startsWith(prefix)) this.#last.delete(key);
  }
}
