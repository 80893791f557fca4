/**
 * What `chorus bench --turns` and `--voice --turns` share: a run's traces grouped by turn index, with each turn's
 * outcome and the usage the server reported, and one server's figures over another's by turn index. Pure: no clock,
 * no I/O.
 */

/** What a turn's trace tells of its outcome and usage, typed (RequestTrace) or spoken (TurnTrace). */
export interface UsageTrace {
  readonly ok: boolean;
  readonly error?: string;
  readonly promptTokens?: number;
  readonly cachedTokens?: number;
}

/** One turn index (1 = each conversation's first turn) over a run's conversations: what every row starts with. */
export interface TurnUsage {
  readonly turn: number;
  /** Conversations that had this turn. */
  readonly conversations: number;
  readonly completed: number;
  readonly failed: number;
  /** Over completed turns that reported usage; null when none did. */
  readonly mean_input_tokens: number | null;
  readonly mean_cached_tokens: number | null;
  /** Cached over input tokens, each summed over the completed turns that reported both. */
  readonly cached_share: number | null;
  /** The failed turns' errors, deduplicated. */
  readonly errors: readonly string[];
}

/** One server's run of conversations at one concurrency, its rows by turn index. */
export interface ConversationsRun<Row> {
  /** Which server: the config's name (--compare-config), cache / no-cache, async or sync. */
  readonly variant: string;
  readonly concurrency: number;
  readonly conversations: number;
  /** Turns per conversation (--turns). */
  readonly turns_per_conversation: number;
  readonly completed: number;
  readonly failed: number;
  /** Time the run's conversations were in flight: the sum over its blocks. */
  readonly duration_s: number;
  /** Blocks of conversations the run was measured in (2 when two servers alternate, else 1). */
  readonly blocks: number;
  readonly turns: readonly Row[];
}

/** The first server's p50s over the second's by turn index, at one concurrency (below 1: the first is faster). */
export interface ByTurnRatio<X> {
  readonly concurrency: number;
  readonly variant: string;
  readonly over_variant: string;
  readonly turns: readonly ({ readonly turn: number } & X)[];
}

export function meanOf(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

export function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

export function withUsage<T extends UsageTrace>(traces: readonly T[]): T[] {
  return traces.filter((x) => x.ok && x.promptTokens !== undefined && x.cachedTokens !== undefined);
}

/**
 * Rows by turn index from [conversation][turn] traces (conversations may have fewer turns than others): `row` gets
 * the turn's answered traces, its usage columns and turn 1's row (undefined at turn 1: turn 1 is its own base).
 */
export function byTurn<T extends UsageTrace, R>(
  traces: readonly (readonly T[])[],
  row: (ok: T[], usage: TurnUsage, turn1: R | undefined) => R,
): R[] {
  const rows: R[] = [];
  const turns = Math.max(0, ...traces.map((c) => c.length));
  for (let t = 0; t < turns; t++) {
    const at = traces.filter((c) => c.length > t).map((c) => c[t]);
    const ok = at.filter((x) => x.ok);
    const both = withUsage(ok);
    const inputSum = both.reduce((n, x) => n + x.promptTokens!, 0);
    const usage: TurnUsage = {
      turn: t + 1,
      conversations: at.length,
      completed: ok.length,
      failed: at.length - ok.length,
      mean_input_tokens: meanOf(ok.filter((x) => x.promptTokens !== undefined).map((x) => x.promptTokens!)),
      mean_cached_tokens: meanOf(both.map((x) => x.cachedTokens!)),
      cached_share: inputSum === 0 ? null : both.reduce((n, x) => n + x.cachedTokens!, 0) / inputSum,
      errors: [...new Set(at.filter((x) => !x.ok).map((x) => x.error ?? 'unknown error'))],
    };
    rows.push(row(ok, usage, rows[0]));
  }
  return rows;
}

/** `of(a, b)` at every turn index both rows measured. */
export function turnPairs<Row extends { readonly turn: number }, X>(
  a: readonly Row[],
  b: readonly Row[],
  of: (a: Row, b: Row) => X,
): ({ turn: number } & X)[] {
  return a.flatMap((x) => {
    const y = b.find((r) => r.turn === x.turn);
    return y ? [{ turn: x.turn, ...of(x, y) }] : [];
  });
}

/** `variant`'s figures over `over`'s by turn index (`of`), at every concurrency both ran. */
export function ratiosByTurn<Row extends { readonly turn: number }, X>(
  runs: readonly ConversationsRun<Row>[],
  variant: string,
  over: string,
  of: (a: Row, b: Row) => X,
): ByTurnRatio<X>[] {
  return runs
    .filter((a) => a.variant === variant)
    .flatMap((a) => {
      const b = runs.find((r) => r.variant === over && r.concurrency === a.concurrency);
      return b
        ? [{ concurrency: a.concurrency, variant, over_variant: over, turns: turnPairs(a.turns, b.turns, of) }]
        : [];
    });
}
