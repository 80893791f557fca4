/**
 * DIR/plot.svg: mean TTFP (log scale: async and sync differ by orders of magnitude) and mean RTF (linear, with
 * the real-time line at 1) against concurrency, one line per variant (async_chunk value, or config). Plain SVG
 * written by hand: the picture is two small line charts, not worth a plotting dependency.
 */
import type { RunRow } from '../results.ts';

const PANEL_W = 420;
const PANEL_H = 300;
const M = { left: 64, right: 16, top: 36, bottom: 48 };
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'] as const;

interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: readonly { readonly c: number; readonly y: number }[];
}

/** async blue and sync red whatever ran first; configs in the order they ran. */
function colorOf(variant: string, index: number): string {
  if (variant === 'async') return PALETTE[0];
  if (variant === 'sync') return PALETTE[1];
  return PALETTE[index % PALETTE.length];
}

function legendOf(variant: string): string {
  return variant === 'async' || variant === 'sync' ? `async_chunk ${variant === 'async'}` : variant;
}

interface Scale {
  readonly at: (v: number) => number;
  readonly ticks: readonly number[];
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function fmt(v: number): string {
  if (v >= 1000) return `${v / 1000}k`;
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(2)));
}

function logScale(min: number, max: number, height: number): Scale {
  const lo = Math.floor(Math.log10(min));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(max)));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++)
    for (const m of hi - lo <= 2 ? [1, 2, 5] : [1]) if (m * 10 ** e <= 10 ** hi) ticks.push(m * 10 ** e);
  return { at: (v) => height - ((Math.log10(v) - lo) / (hi - lo)) * height, ticks };
}

function linearScale(max: number, height: number): Scale {
  const step = niceStep(max / 5);
  const top = Math.max(step, Math.ceil(max / step) * step);
  const ticks: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(6)));
  return { at: (v) => height - (v / top) * height, ticks };
}

function niceStep(raw: number): number {
  const e = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * e).find((s) => s >= raw) ?? 10 * e;
}

function panel(
  x0: number,
  title: string,
  yLabel: string,
  series: readonly Series[],
  xs: readonly number[],
  log: boolean,
  refLine: number | null,
): string {
  const w = PANEL_W - M.left - M.right;
  const h = PANEL_H - M.top - M.bottom;
  const values = series.flatMap((s) => s.points.map((p) => p.y)).filter((v) => v > 0);
  if (refLine !== null) values.push(refLine);
  if (values.length === 0)
    return `<text x="${x0 + PANEL_W / 2}" y="${PANEL_H / 2}" text-anchor="middle">${esc(title)}: no data</text>`;
  const y = log ? logScale(Math.min(...values), Math.max(...values), h) : linearScale(Math.max(...values), h);
  const xAt = (c: number) => (xs.length === 1 ? w / 2 : (xs.indexOf(c) / (xs.length - 1)) * w);
  const parts: string[] = [`<g transform="translate(${x0 + M.left},${M.top})">`];
  parts.push(`<text x="${w / 2}" y="-14" text-anchor="middle" font-weight="bold">${esc(title)}</text>`);
  for (const t of y.ticks) {
    parts.push(`<line x1="0" x2="${w}" y1="${y.at(t).toFixed(1)}" y2="${y.at(t).toFixed(1)}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="-6" y="${(y.at(t) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const c of xs) parts.push(`<text x="${xAt(c).toFixed(1)}" y="${h + 18}" text-anchor="middle">${c}</text>`);
  parts.push(
    `<line x1="0" x2="0" y1="0" y2="${h}" stroke="#333"/><line x1="0" x2="${w}" y1="${h}" y2="${h}" stroke="#333"/>`,
  );
  parts.push(`<text x="${w / 2}" y="${h + 38}" text-anchor="middle">max concurrency</text>`);
  parts.push(`<text transform="translate(-48,${h / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  if (refLine !== null) {
    const ry = y.at(refLine).toFixed(1);
    parts.push(
      `<line x1="0" x2="${w}" y1="${ry}" y2="${ry}" stroke="#777" stroke-dasharray="5,4"/><text x="${w - 4}" ` +
        `y="${Number(ry) - 4}" text-anchor="end" fill="#777">real time</text>`,
    );
  }
  for (const s of series) {
    const pts = s.points.filter((p) => p.y > 0 || !log).map((p) => `${xAt(p.c).toFixed(1)},${y.at(p.y).toFixed(1)}`);
    if (pts.length > 1)
      parts.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of pts) {
      const [cx, cy] = p.split(',');
      parts.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${s.color}"/>`);
    }
  }
  parts.push('</g>');
  return parts.join('\n');
}

export function plotSvg(runs: readonly RunRow[], subtitle = ''): string {
  const xs = [...new Set(runs.map((r) => r.concurrency))].sort((a, b) => a - b);
  const variants = [...new Set(runs.map((r) => r.variant))];
  const seriesOf = (pick: (r: RunRow) => number | null): Series[] =>
    variants
      .map((name, i) => ({
        name,
        color: colorOf(name, i),
        points: runs
          .filter((r) => r.variant === name)
          .map((r) => ({ c: r.concurrency, y: pick(r) }))
          .filter((p): p is { c: number; y: number } => p.y !== null)
          .sort((a, b) => a.c - b.c),
      }))
      .filter((s) => s.points.length > 0);
  const width = 2 * PANEL_W;
  const height = PANEL_H + 40;
  const ttfp = seriesOf((r) => r.mean_ttfp_ms);
  const legend = ttfp
    .map(
      (s, i) =>
        `<g transform="translate(${M.left + i * 150},${PANEL_H + 14})"><rect width="14" height="4" y="-6" ` +
        `fill="${s.color}"/><text x="20">${esc(legendOf(s.name))}</text></g>`,
    )
    .join('');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(0, 'Mean TTFP', 'TTFP (ms, log scale)', ttfp, xs, true, null),
    panel(
      PANEL_W,
      'Mean RTF',
      'RTF (last audio / audio length)',
      seriesOf((r) => r.mean_rtf),
      xs,
      false,
      1,
    ),
    legend,
    subtitle
      ? `<text x="${width - 8}" y="${height - 8}" text-anchor="end" fill="#777" font-size="10">${esc(subtitle)}</text>`
      : '',
    '</svg>',
    '',
  ].join('\n');
}
