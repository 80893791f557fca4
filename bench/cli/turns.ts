/**
 * `chorus bench --turns N`: conversations of N turns per session at each concurrency (bench/ttfp/turns), the table
 * by turn index to stdout, results.json, results.md and turns.json to --out DIR. Failed turns exit 1, as failed
 * requests do in the TTFP bench.
 */
import type { TurnsBenchOptions } from '../ttfp/turns/runTurnsBench.ts';
import { writeResultFiles } from '../report/writeResultFiles.ts';
import type { TurnDetail } from '../ttfp/turns/turnDetails.ts';
import { printReport, resultsDir } from './flags.ts';

export const turnsUsage = `  chorus bench --turns N [--config FILE | --url URL [--api-key KEY]]
               [--protocol realtime|chat] [--concurrency 1,4] [--num-prompts CONVERSATIONS] [--input-len 40]
               [--system-len N]
               [--output-len 100] [--compare-prefix-cache | --compare-config FILE | --compare-sync
                | --compare-routing POLICY] [--out DIR]
               [--warmup 2] [--seed 0] [--timeout-ms 300000] [--skip-limit] [--limit-repeats 5] [--json]
`;

export async function runTurnsCommand(
  o: Omit<TurnsBenchOptions, 'onRun'> & { readonly out: string | undefined; readonly json: boolean },
): Promise<number> {
  const { runTurnsBench } = await import('../ttfp/turns/runTurnsBench.ts');
  const { formatTurns } = await import('../ttfp/turns/formatTurns.ts');
  const { turnDetails } = await import('../ttfp/turns/turnDetails.ts');
  const details: TurnDetail[] = [];
  const result = await runTurnsBench({ ...o, onRun: (run, traces) => details.push(...turnDetails(run, traces)) });
  const markdown = formatTurns(result);
  const files = await writeResultFiles(resultsDir(o.out, 'turns', result.started_at), result, markdown, {
    turns: details,
  });
  printReport(o.json, result, () => markdown, files);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
