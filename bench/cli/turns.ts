/**
 * `chorus bench --turns N`: conversations of N turns per session at each concurrency (bench/ttfp/turns), the table
 * by turn index to stdout, results.json, results.md and turns.json to --out DIR. Failed turns exit 1, as failed
 * requests do in the TTFP bench.
 */
import path from 'node:path';
import { repoRoot } from '../../src/basics.ts';
import type { TurnsBenchOptions } from '../ttfp/turns/runTurnsBench.ts';
import type { TurnDetail } from '../ttfp/turns/writeTurnsResults.ts';

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
  const { formatTurnsText } = await import('../ttfp/turns/formatTurns.ts');
  const { turnDetails, writeTurnsResults } = await import('../ttfp/turns/writeTurnsResults.ts');
  const details: TurnDetail[] = [];
  const result = await runTurnsBench({ ...o, onRun: (run, traces) => details.push(...turnDetails(run, traces)) });
  const out = path.resolve(
    o.out ?? path.join(repoRoot(), 'bench', 'results', `turns-${result.started_at.replace(/[:.]/g, '-')}`),
  );
  const files = await writeTurnsResults(out, result, details);
  process.stdout.write(o.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatTurnsText(result)}\n`);
  process.stderr.write(`wrote ${files.json}, ${files.markdown}, ${files.turns}\n`);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
