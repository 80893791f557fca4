/**
 * `chorus bench --turns` as the terminal shows it and results.md stores it: a table by turn index per run (every
 * turn up to 12, else 1, 2, 5, 10, 20, ... and the last; results.json has them all; the first mode's c=1 run with
 * its per-turn limit beside it), with two modes a table of both side by side and their ratio, then the per-turn
 * limit's parts and the goal, the failed turns and where the numbers came from.
 */
import { ms, num, pair, pct, provenanceOf, renderMarkdown, type Column } from '../../report/format.ts';
import type { ByTurnRatio, ConversationsRun, TurnUsage } from './byTurn.ts';
import { goalLine, hasLimits, limitColumns, limitNote, limitPartColumns, limitTitle } from './formatTurnLimits.ts';
import type { TurnsResult, TurnsRun } from './turnsResult.ts';
import { displayedTurns, type TurnRatio, type TurnRow } from './turnStats.ts';

export const tokens = (v: number | null): string => (v === null ? '-' : v.toFixed(0));

/** The columns every by-turn table starts with (the spoken conversations' too). */
export const usageColumns: readonly Column<TurnUsage>[] = [
  { header: 'Turn', cell: (r) => String(r.turn) },
  { header: 'Answered', cell: (r) => String(r.completed) },
  { header: 'Failed', cell: (r) => String(r.failed) },
  { header: 'Input tokens', cell: (r) => tokens(r.mean_input_tokens) },
  { header: 'Cached tokens', cell: (r) => tokens(r.mean_cached_tokens) },
  { header: 'Cached share', cell: (r) => pct(r.cached_share) },
];

const turnColumns: readonly Column<TurnRow>[] = [
  ...usageColumns,
  { header: 'TTFT p50 (ms)', cell: (r) => ms(r.p50_ttft_ms) },
  { header: 'TTFP p50 (ms)', cell: (r) => ms(r.p50_ttfp_ms) },
  { header: 'TTFT / turn 1', cell: (r) => num(r.ttft_over_turn1, 2) },
  { header: 'TTFP / turn 1', cell: (r) => num(r.ttfp_over_turn1, 2) },
];

/** Two servers' rows at one turn index, and the first's over the second's. */
export interface SideBySide<Row, Ratio> {
  readonly a: Row;
  readonly b: Row;
  readonly ratio: Ratio;
}

const comparisonColumns: readonly Column<SideBySide<TurnRow, TurnRatio>>[] = [
  { header: 'Turn', cell: (r) => String(r.a.turn) },
  { header: 'Input tokens', cell: (r) => pair(tokens(r.a.mean_input_tokens), tokens(r.b.mean_input_tokens)) },
  { header: 'Cached share', cell: (r) => pair(pct(r.a.cached_share), pct(r.b.cached_share)) },
  { header: 'TTFT p50 (ms)', cell: (r) => pair(ms(r.a.p50_ttft_ms), ms(r.b.p50_ttft_ms)) },
  { header: 'TTFT ratio', cell: (r) => num(r.ratio.ttft, 2) },
  { header: 'TTFP p50 (ms)', cell: (r) => pair(ms(r.a.p50_ttfp_ms), ms(r.b.p50_ttfp_ms)) },
  { header: 'TTFP ratio', cell: (r) => num(r.ratio.ttfp, 2) },
  { header: 'TTFP / turn 1', cell: (r) => pair(num(r.a.ttfp_over_turn1, 2), num(r.b.ttfp_over_turn1, 2)) },
  { header: 'Failed', cell: (r) => pair(String(r.a.failed), String(r.b.failed)) },
];

/** The run's columns: with its per-turn limit when it is the run the limit was measured for. */
function columnsOf(r: TurnsResult, run: TurnsRun): readonly Column<TurnRow>[] {
  return hasLimits(r.turn_limits, run) ? [...turnColumns, ...limitColumns(r.turn_limits)] : turnColumns;
}

/** The rows of the turn indexes the tables show (results.json has them all). */
export function shown<R extends { readonly turn: number }>(rows: readonly R[], turns: number): R[] {
  const keep = new Set(displayedTurns(turns));
  return rows.filter((r) => keep.has(r.turn));
}

function runTitle(r: TurnsResult, run: TurnsRun): string {
  return (
    `${run.variant}, ${r.options.protocol}, c=${run.concurrency}: ${run.conversations} conversations x ` +
    `${run.turns_per_conversation} turns, ${run.completed} answered, ${run.failed} failed, ` +
    `${run.duration_s.toFixed(1)} s` +
    (run.computed_positions === null ? '' : `, ${run.computed_positions} prompt positions computed`) +
    (run.system_computed_times == null
      ? ''
      : ` (the ${r.options.system_len}-token system prompt ${run.system_computed_times.toFixed(2)} times)`)
  );
}

/** The rows of a ratio's two runs beside it, at the turn indexes shown. */
export function sideBySide<Row extends { readonly turn: number }, X>(
  r: { readonly runs: readonly ConversationsRun<Row>[]; readonly options: { readonly turns: number } },
  x: ByTurnRatio<X>,
): SideBySide<Row, { turn: number } & X>[] {
  const of = (variant: string) => r.runs.find((run) => run.variant === variant && run.concurrency === x.concurrency)!;
  const [a, b] = [of(x.variant), of(x.over_variant)];
  return shown(x.turns, r.options.turns).map((ratio) => ({
    a: a.turns.find((t) => t.turn === ratio.turn)!,
    b: b.turns.find((t) => t.turn === ratio.turn)!,
    ratio,
  }));
}

export function ratioTitle(x: ByTurnRatio<unknown>): string {
  return `${x.variant} / ${x.over_variant} by turn, c=${x.concurrency} (p50s; a ratio below 1: ${x.variant} is faster)`;
}

export function failureLines(runs: readonly ConversationsRun<TurnUsage>[]): string[] {
  return runs.flatMap((run) =>
    run.turns
      .filter((t) => t.failed > 0)
      .map((t) => `${run.variant} c=${run.concurrency} turn ${t.turn}: ${t.failed} failed: ${t.errors.join('; ')}`),
  );
}

function provenance(r: TurnsResult): string {
  return (
    `${provenanceOf(r)}; protocol ${r.options.protocol}, user messages ` +
    `of ${r.options.input_len} tokens, answers of ${r.options.output_len} tokens, warm-up ${r.options.warmup}, seed ` +
    `${r.options.seed}` +
    (r.options.interleaved ? '; both servers up, each concurrency run in halves A B B A' : '')
  );
}

/** The one report, Markdown: results.md holds it and the terminal prints it. */
export function formatTurns(r: TurnsResult): string {
  const out = ['# chorus bench --turns results', '', `\`${r.command}\``, '', provenance(r)];
  for (const run of r.runs)
    out.push('', `**${runTitle(r, run)}**`, '', renderMarkdown(columnsOf(r, run), shown(run.turns, r.options.turns)));
  for (const x of r.ratios)
    out.push('', `**${ratioTitle(x)}**`, '', renderMarkdown(comparisonColumns, sideBySide(r, x)));
  const limits = r.turn_limits;
  if (limits)
    out.push(
      '',
      `**${limitTitle(limits)}**`,
      '',
      renderMarkdown(limitPartColumns, limits.turns),
      '',
      `${limitNote(limits)}.`,
      '',
      goalLine(limits),
    );
  const failures = failureLines(r.runs);
  if (failures.length > 0) out.push('', '**Failed turns**', '', ...failures.map((l) => `- ${l}`));
  out.push(
    '',
    'Input and cached tokens: means over the answered turns, from the usage the server reported ' +
      '(Realtime input_token_details.cached_tokens, chat prompt_tokens_details.cached_tokens). TTFT / turn 1: the ' +
      "turn's p50 over turn 1's." +
      (limits
        ? " Limit: the runners alone computing the turn's new positions over a cached past of its length (Thinker " +
          "prefill + decode to the first chunk, Talker prefill + the first chunk's frames, Code2Wav), medians."
        : ''),
  );
  return `${out.join('\n')}\n`;
}
