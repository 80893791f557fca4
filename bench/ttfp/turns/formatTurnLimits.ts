/**
 * The per-turn limit in the `chorus bench --turns` report: two columns of the run it was measured for (the first
 * mode at c=1), "Limit (ms)" and "TTFP / limit", a table of what each limit is made of, and the goal's line.
 */
import { ms, num, type Column } from '../../report/format.ts';
import type { TurnLimitRow, TurnLimits } from './turnLimitPlan.ts';
import type { TurnsRun } from './turnsResult.ts';
import type { TurnRow } from './turnStats.ts';

/** Whether `run` is the run the limits were measured for. */
export function hasLimits(limits: TurnLimits | null | undefined, run: TurnsRun): limits is TurnLimits {
  // undefined: a result written before the per-turn limit existed.
  return limits?.variant === run.variant && limits.concurrency === run.concurrency;
}

/** The two columns beside a run's turn rows ('-' at a turn with no limit: no usage reported, or not measured). */
export function limitColumns(limits: TurnLimits): Column<TurnRow>[] {
  const at = (r: TurnRow) => limits.turns.find((l) => l.turn === r.turn);
  return [
    { header: 'Limit (ms)', cell: (r) => ms(at(r)?.median.total_ms ?? null) },
    { header: 'TTFP / limit', cell: (r) => num(at(r)?.ttfp_over_limit ?? null, 2) },
  ];
}

/** What each turn's limit computes and how long each part took (medians). */
export const limitPartColumns: readonly Column<TurnLimitRow>[] = [
  { header: 'Turn', cell: (l) => String(l.turn) },
  { header: 'Input', cell: (l) => String(l.input_tokens) },
  { header: 'Thinker cached + new', cell: (l) => `${l.cached_tokens} + ${l.thinker_new_positions}` },
  { header: 'Talker cached + new', cell: (l) => `${l.talker_cached_rows} + ${l.talker_new_rows}` },
  { header: 'Thinker prefill', cell: (l) => ms(l.median.thinker_prefill_ms) },
  { header: 'Thinker decode', cell: (l) => ms(l.median.thinker_decode_ms) },
  { header: 'Talker prefill', cell: (l) => ms(l.median.talker_prefill_ms) },
  { header: 'Talker frames', cell: (l) => ms(l.median.talker_decode_ms) },
  { header: 'Code2Wav', cell: (l) => ms(l.median.code2wav_ms) },
  { header: 'Limit (ms)', cell: (l) => ms(l.median.total_ms) },
];

export function limitTitle(limits: TurnLimits): string {
  const { variant, concurrency, repeats } = limits;
  return `per-turn limit, ${variant} c=${concurrency} (the runners alone, medians of ${repeats} runs, ms)`;
}

/** What the limit computes, under its table. */
export function limitNote(limits: TurnLimits): string {
  const steps = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  return (
    `each turn's new positions over a cached past of its length, one process; IC ${limits.initial_chunk_frames} ` +
    `frames (${steps(limits.thinker_decode_steps, 'Thinker decode step')}, ` +
    `${steps(limits.talker_decode_steps, 'Talker frame')} after frame 0); the Talker's cached rows are estimated ` +
    `(the previous turn's prompt in whole blocks)`
  );
}

export function goalLine(limits: TurnLimits): string {
  const goal = `goal (issue 27): TTFP <= ${limits.goal}x the turn's limit at every turn index, c=1`;
  if (limits.worst === null) return `${goal}: no turn with both a TTFP and a limit`;
  const { turn, ttfp_over_limit: worst } = limits.worst;
  return `${goal}: worst ${worst.toFixed(2)}x at turn ${turn}, ${limits.met ? 'met' : 'not met'}`;
}
