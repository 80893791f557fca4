/**
 * The last line before prom-client, which throws on NaN and ±Infinity ("Value is not a valid number") — and from a
 * diagnostics_channel subscriber such a throw is re-thrown on the next tick, uncaught: it crashed main (issue 41).
 * The control guard already drops reports whose numbers are not finite and in range; every metric still takes a
 * number from another process only through this check, so a report the guard let through by a mistake costs a
 * sample, never the server.
 */
export function isMetricNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
