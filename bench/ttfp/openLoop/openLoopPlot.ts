/**
 * DIR/plot.svg of an open-loop run: the capacity curve. Left, the admitted requests' TTFP p95 against the offered
 * rate (log scale: beyond capacity it grows by orders of magnitude), with the SLO as a dashed line when one is set;
 * right, goodput (solid) and admitted req/s (dashed) against the offered rate, with the line where every offered
 * request would count (y = x). One colour per server, as plotSvg.ts colours them. Plain SVG written by hand.
 */
import { colorOf, esc, fmt, footer, legendOf, linearTicks, logTicks } from '../report/svgParts.ts';
import type { OpenLoopRow } from './openLoopStats.ts';

const PANEL_W = 460;
const PANEL_H = 320;
const M = { left: 64, right: 16, top: 36, bottom: 48 };
interface Curve {
  readonly color: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
}

interface Axes {
  readonly title: string;
  readonly yLabel: string;
  readonly log: boolean;
  /** A horizontal reference (the SLO) or the diagonal y = x. */
  readonly reference: { readonly y: number; readonly label: string } | 'diagonal' | null;
}

function panel(x0: number, a: Axes, curves: readonly Curve[], xMax: number): string {
  const w = PANEL_W - M.left - M.right;
  const h = PANEL_H - M.top - M.bottom;
  const ys = curves.flatMap((c) => c.points.map(([, y]) => y)).filter((y) => Number.isFinite(y) && (y > 0 || !a.log));
  if (a.reference !== null && a.reference !== 'diagonal') ys.push(a.reference.y);
  if (a.reference === 'diagonal') ys.push(xMax);
  if (ys.length === 0)
    return `<text x="${x0 + PANEL_W / 2}" y="${PANEL_H / 2}" text-anchor="middle">${esc(a.title)}: no data</text>`;
  const xTicks = linearTicks(xMax);
  const xTop = xTicks.at(-1)!;
  const xAt = (v: number) => (v / xTop) * w;
  let yAt: (v: number) => number;
  let yTicks: number[];
  if (a.log) {
    const { lo, hi, ticks } = logTicks(Math.min(...ys), Math.max(...ys));
    yTicks = ticks;
    yAt = (v) => h - ((Math.log10(v) - lo) / (hi - lo)) * h;
  } else {
    yTicks = linearTicks(Math.max(...ys));
    const top = yTicks.at(-1)!;
    yAt = (v) => h - (v / top) * h;
  }
  const out: string[] = [`<g transform="translate(${x0 + M.left},${M.top})">`];
  out.push(`<text x="${w / 2}" y="-14" text-anchor="middle" font-weight="bold">${esc(a.title)}</text>`);
  for (const t of yTicks) {
    const y = yAt(t).toFixed(1);
    out.push(`<line x1="0" x2="${w}" y1="${y}" y2="${y}" stroke="#e4e4e4"/>`);
    out.push(`<text x="-6" y="${Number(y) + 4}" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const t of xTicks)
    out.push(`<text x="${xAt(t).toFixed(1)}" y="${h + 18}" text-anchor="middle">${fmt(t)}</text>`);
  out.push(
    `<line x1="0" x2="0" y1="0" y2="${h}" stroke="#333"/><line x1="0" x2="${w}" y1="${h}" y2="${h}" stroke="#333"/>`,
  );
  out.push(`<text x="${w / 2}" y="${h + 38}" text-anchor="middle">offered (req/s)</text>`);
  out.push(`<text transform="translate(-48,${h / 2}) rotate(-90)" text-anchor="middle">${esc(a.yLabel)}</text>`);
  if (a.reference === 'diagonal') {
    const end = Math.min(xTop, Math.max(...ys));
    out.push(
      `<line x1="0" y1="${yAt(a.log ? 1 : 0).toFixed(1)}" x2="${xAt(end).toFixed(1)}" y2="${yAt(end).toFixed(1)}" ` +
        'stroke="#777" stroke-dasharray="5,4"/>',
    );
  } else if (a.reference !== null) {
    const y = yAt(a.reference.y).toFixed(1);
    out.push(
      `<line x1="0" x2="${w}" y1="${y}" y2="${y}" stroke="#777" stroke-dasharray="5,4"/>` +
        `<text x="${w - 4}" y="${Number(y) - 4}" text-anchor="end" fill="#777">${esc(a.reference.label)}</text>`,
    );
  }
  for (const c of curves) {
    const pts = c.points.filter(([, y]) => Number.isFinite(y) && (y > 0 || !a.log));
    const xy = pts.map(([x, y]) => `${xAt(x).toFixed(1)},${yAt(y).toFixed(1)}`);
    if (xy.length > 1)
      out.push(
        `<polyline points="${xy.join(' ')}" fill="none" stroke="${c.color}" stroke-width="${c.dashed ? 1.5 : 2}"` +
          `${c.dashed ? ' stroke-dasharray="4,3"' : ''}/>`,
      );
    if (!c.dashed)
      for (const p of xy) {
        const [cx, cy] = p.split(',');
        out.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${c.color}"/>`);
      }
  }
  out.push('</g>');
  return out.join('\n');
}

export function openLoopPlotSvg(rows: readonly OpenLoopRow[], sloTtfpMs: number | null, subtitle = ''): string {
  const variants = [...new Set(rows.map((r) => r.variant))];
  const of = (v: string) => rows.filter((r) => r.variant === v).sort((a, b) => a.offered_rps - b.offered_rps);
  const xMax = Math.max(1e-3, ...rows.map((r) => r.offered_rps));
  const ttfp: Curve[] = variants.map((v, i) => ({
    color: colorOf(v, i),
    points: of(v)
      .filter((r) => r.ttfp_ms.p95 !== null)
      .map((r) => [r.offered_rps, r.ttfp_ms.p95!] as const),
  }));
  const goodput: Curve[] = variants.flatMap((v, i) => [
    { color: colorOf(v, i), points: of(v).map((r) => [r.offered_rps, r.goodput_rps] as const) },
    { color: colorOf(v, i), points: of(v).map((r) => [r.offered_rps, r.admitted_rps] as const), dashed: true },
  ]);
  const width = 2 * PANEL_W;
  const height = PANEL_H + 40;
  const legend = variants
    .map(
      (v, i) =>
        `<g transform="translate(${M.left + i * 150},${PANEL_H + 14})"><rect width="14" height="4" y="-6" ` +
        `fill="${colorOf(v, i)}"/><text x="20">${esc(legendOf(v))}</text></g>`,
    )
    .join('');
  const key =
    `<text x="${M.left + Math.max(1, variants.length) * 150}" y="${PANEL_H + 14}" fill="#555">` +
    'right: goodput solid, admitted dashed; grey: every offered request</text>';
  const slo = sloTtfpMs === null ? null : { y: sloTtfpMs, label: `SLO ${sloTtfpMs} ms` };
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      'font-family="sans-serif" font-size="12">',
    '<rect width="100%" height="100%" fill="white"/>',
    panel(
      0,
      { title: 'TTFP p95 (admitted)', yLabel: 'TTFP p95 (ms, log scale)', log: true, reference: slo },
      ttfp,
      xMax,
    ),
    panel(
      PANEL_W,
      {
        title: sloTtfpMs === null ? 'Goodput (no underrun)' : `Goodput (TTFP <= ${sloTtfpMs} ms, no underrun)`,
        yLabel: 'req/s',
        log: false,
        reference: 'diagonal',
      },
      goodput,
      xMax,
    ),
    legend,
    key,
    footer(subtitle, width, height),
    '</svg>',
    '',
  ].join('\n');
}
