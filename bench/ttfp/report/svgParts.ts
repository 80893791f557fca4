/**
 * What the bench's hand-written SVG plots share (plotSvg.ts, openLoop/openLoopPlot.ts): colours and legend names
 * per variant, escaping, tick labels, linear and log ticks, the subtitle footer.
 */

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'] as const;

/** async blue and sync red whatever ran first; configs in the order they ran. */
export function colorOf(variant: string, index: number): string {
  if (variant === 'async') return PALETTE[0];
  if (variant === 'sync') return PALETTE[1];
  return PALETTE[index % PALETTE.length];
}

export function legendOf(variant: string): string {
  return variant === 'async' || variant === 'sync' ? `async_chunk ${variant === 'async'}` : variant;
}

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A tick label: thousands as k, two significant digits. */
export function fmt(v: number): string {
  if (v >= 1000) return `${v / 1000}k`;
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(2)));
}

/** Ticks from 0 past `max` in a step of 1, 2 or 5 times a power of ten, about five of them. */
export function linearTicks(max: number): number[] {
  const raw = max / 5;
  const e = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * e).find((s) => s >= raw) ?? 10 * e;
  const top = Math.max(step, Math.ceil(max / step) * step);
  const ticks: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(6)));
  return ticks;
}

/** Decades covering [min, max] (1, 2 and 5 of each when they are two or fewer), as powers of ten lo..hi. */
export function logTicks(min: number, max: number): { lo: number; hi: number; ticks: number[] } {
  const lo = Math.floor(Math.log10(min));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(max)));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++)
    for (const m of hi - lo <= 2 ? [1, 2, 5] : [1]) if (m * 10 ** e <= 10 ** hi) ticks.push(m * 10 ** e);
  return { lo, hi, ticks };
}

/** The subtitle in the bottom-right corner (nothing without one). */
export function footer(subtitle: string, width: number, height: number): string {
  if (!subtitle) return '';
  const at = `x="${width - 8}" y="${height - 8}"`;
  return `<text ${at} text-anchor="end" fill="#777" font-size="10">${esc(subtitle)}</text>`;
}
