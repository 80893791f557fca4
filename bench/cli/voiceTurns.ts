/**
 * `chorus bench --voice --turns N`: spoken conversations of N turns per session at each concurrency
 * (bench/voice/conversations), the table by turn index to stdout, results.json, results.md and turns.json to --out
 * DIR. Failed turns exit 1, as failed requests do in the other benches.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfigPath } from '../../src/index.ts';
import { repoRoot, logger, intFlag, UsageError } from '../../src/basics.ts';
import type { VoiceTurnDetail } from '../voice/conversations/writeVoiceTurnsResults.ts';

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

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        voice: { type: 'boolean' },
        turns: { type: 'string' },
        config: { type: 'string' },
        url: { type: 'string' },
        'api-key': { type: 'string' },
        concurrency: { type: 'string', default: '1,4' },
        'num-prompts': { type: 'string' },
        'output-len': { type: 'string' },
        'max-tokens': { type: 'string' },
        'silence-ms': { type: 'string' },
        'compare-prefix-cache': { type: 'boolean', default: false },
        'compare-config': { type: 'string' },
        out: { type: 'string' },
        warmup: { type: 'string' },
        seed: { type: 'string' },
        'timeout-ms': { type: 'string' },
        json: { type: 'boolean', default: false },
        goals: { type: 'boolean', default: false },
      },
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
}

/** The argv of `chorus bench` holding --voice and --turns. */
export async function runVoiceTurnsCommand(argv: string[]): Promise<number> {
  // The refused flags may be booleans elsewhere (--skip-limit): find them before parseArgs asks for their value.
  for (const flag of Object.keys(NOT_FOR_VOICE_TURNS))
    if (argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`)))
      throw new UsageError(`--${flag} is not for --voice --turns: ${NOT_FOR_VOICE_TURNS[flag]}`);
  const v = parse(argv);
  const int = (flag: string, value: string | undefined, fallback: number, min = 1): number =>
    intFlag(`--${flag}`, value, min) ?? fallback;
  if (v.turns === undefined) throw new UsageError('--turns N is needed');
  const turns = int('turns', v.turns, 1);
  if (v.url !== undefined && v.config !== undefined)
    throw new UsageError('give either --url (a running server) or --config (the bench starts one), not both');
  if (v['compare-prefix-cache'] && v['compare-config'] !== undefined)
    throw new UsageError('give one of --compare-prefix-cache and --compare-config');
  for (const flag of ['compare-prefix-cache', 'compare-config'] as const)
    if (v[flag] !== undefined && v[flag] !== false && v.url !== undefined)
      throw new UsageError(`--${flag} is for --config: the bench starts both servers`);
  const outputLen = v['output-len'] ?? v['max-tokens'];
  if (v['output-len'] !== undefined && v['max-tokens'] !== undefined && v['output-len'] !== v['max-tokens'])
    throw new UsageError(
      `--output-len ${v['output-len']} and --max-tokens ${v['max-tokens']} are the same flag: give one`,
    );
  const concurrency = v.concurrency.split(',').map((c) => int('concurrency', c.trim(), 1));
  const options = {
    target:
      v.url !== undefined
        ? {
            kind: 'url' as const,
            url: v.url.replace(/\/+$/, ''),
            apiKey: v['api-key'] ?? process.env.CHORUS_API_KEY ?? null,
          }
        : { kind: 'config' as const, file: path.resolve(v.config ?? defaultConfigPath()) },
    comparePrefixCache: v['compare-prefix-cache'] === true,
    ...(v['compare-config'] !== undefined ? { compareConfig: path.resolve(v['compare-config']) } : {}),
    concurrency,
    turns,
    ...(v['num-prompts'] !== undefined ? { conversations: int('num-prompts', v['num-prompts'], 1) } : {}),
    outputLen: int(v['max-tokens'] !== undefined ? 'max-tokens' : 'output-len', outputLen, 100),
    silenceMs: int('silence-ms', v['silence-ms'], 500, 0),
    warmup: int('warmup', v.warmup, 2, 0),
    seed: int('seed', v.seed, 0, 0),
    timeoutMs: int('timeout-ms', v['timeout-ms'], 120_000),
    progress: process.stderr,
    log: logger.child({ component: 'bench' }),
    command: `chorus bench ${argv.join(' ')}`.trim(),
  };
  const { runVoiceTurnsBench } = await import('../voice/conversations/runVoiceTurnsBench.ts');
  const { formatVoiceTurnsText } = await import('../voice/conversations/formatVoiceTurns.ts');
  const { voiceTurnDetails, writeVoiceTurnsResults } = await import('../voice/conversations/writeVoiceTurnsResults.ts');
  const details: VoiceTurnDetail[] = [];
  const result = await runVoiceTurnsBench({
    ...options,
    onRun: (run, traces, spoken) => details.push(...voiceTurnDetails(run, traces, spoken)),
  });
  const out = path.resolve(
    v.out ?? path.join(repoRoot(), 'bench', 'results', `voice-turns-${result.started_at.replace(/[:.]/g, '-')}`),
  );
  const files = await writeVoiceTurnsResults(out, result, details);
  process.stdout.write(
    v.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatVoiceTurnsText(result, { goals: v.goals === true })}\n`,
  );
  process.stderr.write(`wrote ${files.json}, ${files.markdown}, ${files.turns}\n`);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
