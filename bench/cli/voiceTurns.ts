/**
 * `chorus bench --voice --turns N`: spoken conversations of N turns per session at each concurrency
 * (bench/voice/conversations), the table by turn index to stdout, results.json, results.md and turns.json to --out
 * DIR. Failed turns exit 1, as failed requests do in the other benches.
 */
import path from 'node:path';
import { logger, UsageError } from '../../src/basics.ts';
import { writeResultFiles } from '../report/writeResultFiles.ts';
import type { VoiceTurnDetail } from '../voice/conversations/voiceTurnDetails.ts';
import { concurrencyOf, int, outputLenOf, parse, printReport, resultsDir, targetOf, VOICE_OPTIONS } from './flags.ts';

export const voiceTurnsUsage = `  chorus bench --voice --turns N [--config FILE | --url URL [--api-key KEY]]
                       [--concurrency 1,4] [--num-prompts CONVERSATIONS] [--output-len 100] [--silence-ms 500]
                       [--compare-prefix-cache | --compare-config FILE] [--out DIR] [--warmup 2] [--seed 0]
                       [--timeout-ms 120000] [--goals] [--json]
`;

/** Flags of the other benches that mean nothing here, and why (a clear refusal, not "Unknown option"). */
const NOT_FOR_VOICE_TURNS: Readonly<Record<string, string>> = {
  protocol: 'spoken conversations are Realtime sessions (server VAD)',
  'input-len': 'each user turn is a spoken sentence (bench/voice/conversations/spokenConversations.ts)',
  'compare-sync': 'compare with --compare-prefix-cache or --compare-config',
  'compare-scheduling': 'compare with --compare-prefix-cache or --compare-config',
  'skip-limit': 'no critical-path limit or breakdown is measured for conversations',
  'limit-repeats': 'no critical-path limit or breakdown is measured for conversations',
};

const OPTIONS = {
  ...VOICE_OPTIONS,
  turns: { type: 'string' },
  'max-tokens': { type: 'string' },
  'compare-prefix-cache': { type: 'boolean', default: false },
  'compare-config': { type: 'string' },
} as const;

/** The argv of `chorus bench` holding --voice and --turns. */
export async function runVoiceTurnsCommand(argv: string[]): Promise<number> {
  // The refused flags may be booleans elsewhere (--skip-limit): find them before parseArgs asks for their value.
  for (const flag of Object.keys(NOT_FOR_VOICE_TURNS))
    if (argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`)))
      throw new UsageError(`--${flag} is not for --voice --turns: ${NOT_FOR_VOICE_TURNS[flag]}`);
  const v = parse(argv, OPTIONS);
  if (v.turns === undefined) throw new UsageError('--turns N is needed');
  const target = targetOf(v);
  if (v['compare-prefix-cache'] && v['compare-config'] !== undefined)
    throw new UsageError('give one of --compare-prefix-cache and --compare-config');
  for (const flag of ['compare-prefix-cache', 'compare-config'] as const)
    if (v[flag] !== undefined && v[flag] !== false && v.url !== undefined)
      throw new UsageError(`--${flag} is for --config: the bench starts both servers`);
  const options = {
    target,
    comparePrefixCache: v['compare-prefix-cache'] === true,
    ...(v['compare-config'] !== undefined ? { compareConfig: path.resolve(v['compare-config']) } : {}),
    concurrency: concurrencyOf(v.concurrency),
    turns: int('turns', v.turns, 1),
    ...(v['num-prompts'] !== undefined ? { conversations: int('num-prompts', v['num-prompts'], 1) } : {}),
    outputLen: outputLenOf(v),
    silenceMs: int('silence-ms', v['silence-ms'], 500, 0),
    warmup: int('warmup', v.warmup, 2, 0),
    seed: int('seed', v.seed, 0, 0),
    timeoutMs: int('timeout-ms', v['timeout-ms'], 120_000),
    progress: process.stderr,
    log: logger.child({ component: 'bench' }),
    command: `chorus bench ${argv.join(' ')}`.trim(),
  };
  const { runVoiceTurnsBench } = await import('../voice/conversations/runVoiceTurnsBench.ts');
  const { formatVoiceTurnsMarkdown, formatVoiceTurnsText } = await import('../voice/conversations/formatVoiceTurns.ts');
  const { voiceTurnDetails } = await import('../voice/conversations/voiceTurnDetails.ts');
  const details: VoiceTurnDetail[] = [];
  const result = await runVoiceTurnsBench({
    ...options,
    onRun: (run, traces, spoken) => details.push(...voiceTurnDetails(run, traces, spoken)),
  });
  const out = resultsDir(v.out, 'voice-turns', result.started_at);
  const files = await writeResultFiles(out, result, formatVoiceTurnsMarkdown(result), { turns: details });
  printReport(v.json, result, () => formatVoiceTurnsText(result, { goals: v.goals === true }), files);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
