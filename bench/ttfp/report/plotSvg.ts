/**
 * DIR/plot.svg: TTFT and TTFP side by side (log scale: async and sync differ by orders of magnitude) and RTF
 * (linear, with the real-time line at 1) against concurrency, one colour per variant (async_chunk value, or
 * config): the p50 as a solid line in a shaded band up to the p99, the mean dashed. A mean alone hides the tail a
 * listener hears. Plain SVG written by hand: three small line charts are not worth a plotting dependency.
 */
import type { RunRow } from '../results.ts';
import { colorOf, esc, fmt, footer, legendOf, linearTicks, logTicks } from './svgParts.ts';

const PANEL_W = 420;
const PANEL_H = 300;
const M = { left: 64, right: 16, top: 36, bottom: 48 };

/** One run's figures for a panel: mean, p50 and p99 (a figure the run did not measure is left out). */
interface Point {
  readonly c: number;
  readonly mean: number | null;
  readonly p50: number | null;
  readonly p99: number | null;
}

interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: readonly Point[];
}

interface Scale {
  readonly at: (v: number) => number;
  readonly ticks: readonly number[];
}

function logScale(min: number, max: number, height: number): Scale {
  const { lo, hi, ticks } = logTicks(min, max);
  return { at: (v) => height - ((Math.log10(v) - lo) / (hi - lo)) * height, ticks };
}

function linearScale(max: number, height: number): Scale {
  const ticks = linearTicks(max);
  const top = ticks.at(-1)!;
  return { at: (v) => height - (v / top) * height, ticks };
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
  const values = series
    .flatMap((s) => s.points.flatMap((p) => [p.mean, p.p50, p.p99]))
    .filter((v): v is number => v !== null && (v > 0 || !log));
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
  const drawn = (v: number | null): v is number => v !== null && (v > 0 || !log);
  const xy = (c: number, v: number) => `${xAt(c).toFixed(1)},${y.at(v).toFixed(1)}`;
  for (const s of series) {
    // The p50-p99 band first, under the lines.
    const band = s.points.filter((p) => drawn(p.p50) && drawn(p.p99));
    if (band.length > 1) {
      const upper = band.map((p) => xy(p.c, p.p99!));
      const lower = band.map((p) => xy(p.c, p.p50!)).reverse();
      parts.push(`<polygon points="${[...upper, ...lower].join(' ')}" fill="${s.color}" fill-opacity="0.15"/>`);
    }
    for (const p of band)
      parts.push(
        `<line x1="${xAt(p.c).toFixed(1)}" x2="${xAt(p.c).toFixed(1)}" y1="${y.at(p.p50!).toFixed(1)}" ` +
          `y2="${y.at(p.p99!).toFixed(1)}" stroke="${s.color}" stroke-opacity="0.5" stroke-width="6"/>`,
      );
    const p50 = s.points.filter((p) => drawn(p.p50)).map((p) => xy(p.c, p.p50!));
    if (p50.length > 1)
      parts.push(`<polyline points="${p50.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const pt of p50) {
      const [cx, cy] = pt.split(',');
      parts.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${s.color}"/>`);
    }
    const mean = s.points.filter((p) => drawn(p.mean)).map((p) => xy(p.c, p.mean!));
    if (mean.length > 1)
      parts.push(
        `<polyline points="${mean.join(' ')}" fill="none" stroke="${s.color}" stroke-width="1.5" ` +
          `stroke-dasharray="4,3"/>`,
      );
  }
  parts.push('</g>');
  return parts.join('\n');
}

type Pick = (r: RunRow) => readonly [number | null, number | null, number | null];

export function plotSvg(runs: readonly RunRow[], subtitle = ''): string {
  const xs = [...new Set(runs.map((r) => r.concurrency))].sort((a, b) => a - b);
  const variants = [...new Set(runs.map((r) => r.variant))];
  const seriesOf = (pick: Pick): Series[] =>
    variants
      .map((name, i) => ({
        name,
        color: colorOf(name, i),
        points: runs
          .filter((r) => r.variant === name)
          .map((r) => {
            const [mean, p50, p99] = pick(r);
            return { c: r.concurrency, mean, p50, p99 };
          })
          .filter((p) => p.mean !== null || p.p50 !== null)
          .sort((a, b) => a.c - b.c),
      }))
      .filter((s) => s.points.length > 0);
  const width = 3 * PANEL_W;
  const height = PANEL_H + 40;
  const ttft = seriesOf((r) => [r.mean_ttft_ms, r.p50_ttft_ms, r.p99_ttft_ms]);
  const ttfp = seriesOf((r) => [r.mean_ttfp_ms, r.p50_ttfp_ms, r.p99_ttfp_ms]);
  const legend = ttfp
    .map(
      (s, i) =>
        `<g transform="translate(${M.left + i * 150},${PANEL_H + 14})"><rect width="14" height="4" y="-6" ` +
        `fill="${s.color}"/><text x="20">${esc(legendOf(s.name))}</text></g>`,
    )
    .join('');
  const key =
    `<text x="${M.left + Math.max(1, ttfp.length) * 150}" y="${PANEL_H + 14}" fill="#555">` +
    'solid: p50; shaded: p50 to p99; dashed: mean</text>';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(0, 'TTFT (first text token)', 'TTFT (ms, log scale)', ttft, xs, true, null),
    panel(PANEL_W, 'TTFP (first audio packet)', 'TTFP (ms, log scale)', ttfp, xs, true, null),
    panel(
      2 * PANEL_W,
      'RTF',
      'RTF (last audio / audio length)',
      seriesOf((r) => [r.mean_rtf, r.p50_rtf, r.p99_rtf]),
      xs,
      false,
      1,
    ),
    legend,
    key,
    footer(subtitle, width, height),
    '</svg>',
    '',
  ].join('\n');
}
