/**
 * The series a stage instance's stats reports feed, labelled by instance: totals since the process started turned
 * into counter increments (CumulativeCounters), and gauges of what the instance holds (cache bytes, KV, states),
 * set back to 0 when it dies, since a gauge left at its old value would report memory nobody holds.
 */
import type { Counter, Gauge } from 'prom-client';
import { CumulativeCounters } from './CumulativeCounters.ts';
import { isMetricNumber } from './metricValue.ts';

/**
 * A reported total: the report's field (a name distinct across every section one series counts), its value (anything
 * but a finite number is no sample), the counter.
 */
export type ReportedTotal = readonly [field: string, total: unknown, counter: Counter<'stage'>];

export class StageSeries {
  readonly #totals = new CumulativeCounters();
  /** The gauges each instance has reported: its death zeroes them. */
  readonly #gauges = new Map<string, Set<Gauge<'stage'>>>();

  /** Adds each total's increment since the instance's last report; inc(0) still creates the series. */
  count(stage: string, totals: readonly ReportedTotal[]): void {
    for (const [field, total, counter] of totals)
      if (isMetricNumber(total)) counter.inc({ stage }, this.#totals.increment(stage, field, total));
  }

  /** Sets a gauge of what the instance holds; reported once, it is zeroed at the instance's death. */
  hold(stage: string, gauge: Gauge<'stage'>, value: unknown): void {
    let gauges = this.#gauges.get(stage);
    if (!gauges) this.#gauges.set(stage, (gauges = new Set()));
    gauges.add(gauge);
    if (isMetricNumber(value)) gauge.set({ stage }, value);
  }

  /** The instance's process is gone: its totals start again, and what it held is 0. */
  died(stage: string): void {
    this.#totals.restart(stage);
    for (const gauge of this.#gauges.get(stage) ?? []) gauge.set({ stage }, 0);
  }
}
