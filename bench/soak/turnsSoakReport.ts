/**
 * The figures of `chorus soak --turns` from its per-turn records (pure, tested in test/unit/turnsSoakReport.test.ts):
 * failed turns, the turns right after a truncation against the turns before them, and each process's RSS at the
 * end against its value after the baseline turn (issue 27's goal: 0 failed, RSS within 10%, TTFP <= 1.5x); the last
 * third of the turns against the first ten (issue 41: a session past its limit stays as fast as it started).
 */
import type { RssSample } from './processRss.ts';
import type { SoakTurn } from './SoakConversation.ts';

/** Turns before a truncating turn that it is compared with (issue 27: "the turns before it"). */
export const TURNS_BEFORE = 5;
/** RSS is compared with its value after this turn (issue 27's goal; `--rss-baseline-turn` moves it). */
export const RSS_BASELINE_TURN = 20;

export interface TruncationFigures {
  /** Turns whose answer dropped items (conversation.item.deleted before its response.created). */
  readonly truncatingTurns: number;
  /** The first of them, per session (null: that session never truncated). */
  readonly firstTruncatingTurn: readonly (number | null)[];
  /** TTFP p50 of the truncating turns. */
  readonly afterP50Ms: number | null;
  /** TTFP p50 of the TURNS_BEFORE turns before each truncating turn (each turn counted once). */
  readonly beforeP50Ms: number | null;
  /** afterP50Ms / beforeP50Ms: the goal is <= 1.5. */
  readonly ratio: number | null;
  /**
   * The same against the TURNS_BEFORE turns before each session's first truncation, none of which truncated.
   * Under "auto" every turn past the limit truncates, so most windows above are truncating turns themselves:
   * this is the cost of truncating against a conversation that only grows.
   */
  readonly beforeFirstP50Ms: number | null;
  readonly ratioToBeforeFirst: number | null;
  /** Cached share of the input, p50 over the truncating turns and over the others after the first turn. */
  readonly cachedShareAfterP50: number | null;
  readonly cachedShareOthersP50: number | null;
}

/** Issue 41's comparison: the first EARLY_TURNS turns against the last third (turns 40-60 of 60). */
const EARLY_TURNS = 10;

export interface LateTurnsFigures {
  /** First and last turn (1-based, inclusive) of each range; every session's turns in it count. */
  readonly early: readonly [number, number];
  readonly late: readonly [number, number];
  /** TTFP p50 of each range (null: no audio in it). */
  readonly earlyP50Ms: number | null;
  readonly lateP50Ms: number | null;
  /** lateP50Ms / earlyP50Ms: the goal is <= 1.5. */
  readonly ratio: number | null;
  /** Turns of the late range whose answer dropped items, of all its turns. */
  readonly lateTruncating: number;
  readonly lateTurns: number;
}

export interface RssFigures {
  /** The sample after the baseline turn (or the last, in a shorter run). */
  readonly baselineTurn: number;
  readonly baselineMiB: number;
  readonly lastTurn: number;
  readonly lastMiB: number;
  readonly maxMiB: number;
  /** lastMiB / baselineMiB: the goal is within 10% (0.9 to 1.1). */
  readonly ratio: number;
  /** Its prefix cache at the baseline and at the end (null: no cache reported for this process). */
  readonly prefixCacheMiB: { readonly baseline: number; readonly last: number } | null;
  /**
   * The ratio of RSS less the prefix cache: a cache filling towards its max_bytes after the baseline turn grows RSS
   * by design; growth beyond it is what a leak looks like.
   */
  readonly ratioLessPrefixCache: number | null;
  /** Distinct pids the samples were read from: more than one means the process restarted. */
  readonly pids: readonly number[];
}

export function p50(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const answered = (t: SoakTurn) => t.status === 'completed' || t.status === 'incomplete';

export function failedTurns(turns: readonly SoakTurn[]): SoakTurn[] {
  return turns.filter((t) => !answered(t));
}

/** `turns`: every turn of every session (any order). */
export function truncationFigures(turns: readonly SoakTurn[]): TruncationFigures {
  const sessions = [...new Set(turns.map((t) => t.session))].sort((a, b) => a - b);
  const after: number[] = [];
  const before = new Map<string, number>(); // session:turn -> TTFP, so overlapping windows count a turn once
  const beforeFirst: number[] = [];
  const firstTruncatingTurn: (number | null)[] = [];
  const share = (t: SoakTurn) => (t.inputTokens ? (t.cachedTokens ?? 0) / t.inputTokens : null);
  const sharesAfter: number[] = [];
  const sharesOthers: number[] = [];
  for (const session of sessions) {
    const ordered = turns.filter((t) => t.session === session).sort((a, b) => a.turn - b.turn);
    let first: number | null = null;
    ordered.forEach((t, i) => {
      const s = share(t);
      if (t.deletedItems === 0) {
        if (i > 0 && s !== null) sharesOthers.push(s);
        return;
      }
      if (s !== null) sharesAfter.push(s);
      if (t.ttfpMs !== null) after.push(t.ttfpMs);
      const window = ordered.slice(Math.max(0, i - TURNS_BEFORE), i);
      for (const w of window) if (w.ttfpMs !== null) before.set(`${session}:${w.turn}`, w.ttfpMs);
      if (first === null) {
        first = t.turn;
        for (const w of window) if (w.ttfpMs !== null) beforeFirst.push(w.ttfpMs);
      }
    });
    firstTruncatingTurn.push(first);
  }
  const afterP50Ms = p50(after);
  const beforeP50Ms = p50([...before.values()]);
  const beforeFirstP50Ms = p50(beforeFirst);
  const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);
  return {
    truncatingTurns: turns.filter((t) => t.deletedItems > 0).length,
    firstTruncatingTurn,
    afterP50Ms,
    beforeP50Ms,
    ratio: ratio(afterP50Ms, beforeP50Ms),
    beforeFirstP50Ms,
    ratioToBeforeFirst: ratio(afterP50Ms, beforeFirstP50Ms),
    cachedShareAfterP50: p50(sharesAfter),
    cachedShareOthersP50: p50(sharesOthers),
  };
}

/** `turns`: every turn of every session; null when there are not more turns than the early range. */
export function lateTurnsFigures(turns: readonly SoakTurn[]): LateTurnsFigures | null {
  const last = Math.max(0, ...turns.map((t) => t.turn));
  if (last <= EARLY_TURNS) return null;
  const early: [number, number] = [1, EARLY_TURNS];
  const late: [number, number] = [Math.max(EARLY_TURNS + 1, Math.round((2 * last) / 3)), last];
  const within = ([a, b]: readonly [number, number]) => turns.filter((t) => t.turn >= a && t.turn <= b);
  const ttfps = (range: readonly [number, number]) =>
    within(range).flatMap((t) => (t.ttfpMs === null || !answered(t) ? [] : [t.ttfpMs]));
  const earlyP50Ms = p50(ttfps(early));
  const lateP50Ms = p50(ttfps(late));
  return {
    early,
    late,
    earlyP50Ms,
    lateP50Ms,
    ratio: earlyP50Ms === null || lateP50Ms === null || earlyP50Ms === 0 ? null : lateP50Ms / earlyP50Ms,
    lateTruncating: within(late).filter((t) => t.deletedItems > 0).length,
    lateTurns: within(late).length,
  };
}

export function rssFigures(
  series: Readonly<Record<string, readonly RssSample[]>>,
  baselineTurn = RSS_BASELINE_TURN,
): Record<string, RssFigures> {
  const out: Record<string, RssFigures> = {};
  for (const [name, samples] of Object.entries(series)) {
    if (samples.length === 0) continue;
    const baseline = samples.find((s) => s.turn >= baselineTurn) ?? samples.at(-1)!;
    const last = samples.at(-1)!;
    const cache =
      baseline.prefixCacheMiB !== undefined && last.prefixCacheMiB !== undefined
        ? { baseline: baseline.prefixCacheMiB, last: last.prefixCacheMiB }
        : null;
    out[name] = {
      baselineTurn: baseline.turn,
      baselineMiB: baseline.mib,
      lastTurn: last.turn,
      lastMiB: last.mib,
      maxMiB: Math.max(...samples.map((s) => s.mib)),
      ratio: last.mib / baseline.mib,
      prefixCacheMiB: cache,
      ratioLessPrefixCache: cache === null ? null : (last.mib - cache.last) / (baseline.mib - cache.baseline),
      pids: [...new Set(samples.map((s) => s.pid))],
    };
  }
  return out;
}
