/** The text report of `chorus soak --turns`: failed turns, truncation TTFP and the RSS table, with the goals. */
import { pct, times } from '../report/format.ts';
import type { TurnsSoakReport } from './runTurnsSoak.ts';
import { TURNS_BEFORE } from './turnsSoakReport.ts';

const RSS_TOLERANCE = 0.1; // issue 27: within 10% of the value after turn 20 (the baseline turn)
const TTFP_AFTER_TRUNCATION_MAX = 1.5; // issue 27: <= 1.5x the turns before
const LATE_TURNS_MAX = 1.5; // issue 41: the last third of a session past its limit <= 1.5x its first ten turns

const ms = (x: number | null) => (x === null ? '-' : `${x.toFixed(1)} ms`);

export function formatTurnsSoak(r: TurnsSoakReport): string {
  const t = r.truncation;
  const baselineTurn = r.options.rssBaselineTurn;
  const ttfpMet = t.ratio === null ? null : t.ratio <= TTFP_AFTER_TRUNCATION_MAX;
  const failedCodes = r.failed.map((f) => `${f.session}:${f.turn} ${f.status}${f.code ? ` ${f.code}` : ''}`);
  const lines = [
    `${r.turns} turns in ${r.options.sessions} session(s), ${r.durationS} s; failed ${r.failed.length}` +
      (failedCodes.length > 0 ? ` (${failedCodes.slice(0, 10).join(', ')})` : '') +
      `  [goal 0: ${r.failed.length === 0 ? 'met' : 'MISSED'}]`,
    `truncating turns ${t.truncatingTurns} (first at turn ${t.firstTruncatingTurn.map((x) => x ?? '-').join(', ')})`,
    `TTFP p50: truncating turns ${ms(t.afterP50Ms)}, the ${TURNS_BEFORE} turns before each ${ms(t.beforeP50Ms)}, ` +
      `ratio ${times(t.ratio)}  [goal <= ${TTFP_AFTER_TRUNCATION_MAX}x: ${goal(ttfpMet)}]`,
    `  against the ${TURNS_BEFORE} turns before the first truncation (none truncating) ${ms(t.beforeFirstP50Ms)}: ` +
      `${times(t.ratioToBeforeFirst)}`,
    `  cached share of input p50: truncating turns ${pct(t.cachedShareAfterP50)}, ` +
      `other turns ${pct(t.cachedShareOthersP50)}`,
    ...lateTurnsLines(r),
    '',
    `RSS (MiB)      turn ${String(baselineTurn).padEnd(4)}  last  last/turn${baselineTurn}     max` +
      `  goal   prefix cache   less cache  pids`,
    ...Object.entries(r.rss).map(([name, f]) => {
      const within = Math.abs(f.ratio - 1) <= RSS_TOLERANCE;
      const cache =
        f.prefixCacheMiB === null ? '' : `${f.prefixCacheMiB.baseline.toFixed(1)}->${f.prefixCacheMiB.last.toFixed(1)}`;
      return (
        `${name.padEnd(14)} ${f.baselineMiB.toFixed(1).padStart(7)} ${f.lastMiB.toFixed(1).padStart(7)}` +
        ` ${f.ratio.toFixed(3).padStart(9)} ${f.maxMiB.toFixed(1).padStart(7)}  ${goal(within).padEnd(6)}` +
        ` ${cache.padStart(12)} ${(f.ratioLessPrefixCache?.toFixed(3) ?? '').padStart(12)}  ${f.pids.join(',')}` +
        (f.baselineTurn !== baselineTurn ? ` (baseline turn ${f.baselineTurn})` : '')
      );
    }),
    '',
    `load average (1 min) ${r.machine.load_avg_start.toFixed(1)} at the start, ` +
      `${r.machine.load_avg_end.toFixed(1)} at the end, on ${r.machine.cpus} cpus`,
    `left over: processes ${JSON.stringify(r.leftover.processes)}, segments ${r.leftover.segments.length}; ` +
      `server exit ${r.serverExitCode}`,
  ];
  return `${lines.join('\n')}\n`;
}

function lateTurnsLines(r: TurnsSoakReport): string[] {
  const l = r.lateTurns;
  if (l === null) return [];
  const met = l.ratio === null ? null : l.ratio <= LATE_TURNS_MAX;
  return [
    `TTFP p50: turns ${l.late.join('-')} ${ms(l.lateP50Ms)} (${l.lateTruncating} of ${l.lateTurns} truncating), ` +
      `turns ${l.early.join('-')} ${ms(l.earlyP50Ms)}, ratio ${times(l.ratio)}  ` +
      `[goal <= ${LATE_TURNS_MAX}x: ${goal(met)}]`,
  ];
}

/** null: nothing to judge (no truncation, or no audio). */
const goal = (met: boolean | null) => (met === null ? 'n/a' : met ? 'met' : 'MISSED');
