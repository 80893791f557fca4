/**
 * What the bench's commands share about their flags: parsing (node's parseArgs; its errors are usage errors, as
 * UsageError is), `chorus bench`'s flags declared once (SERVE_OPTIONS: their readers take its parsed type), numbers
 * and integers that name the flag when they do not parse, the server flags (--url or --config, not both), the
 * --compare-* flags (at most one, those needing both servers started by the bench refused with --url), the results
 * folder and how a run's report is printed.
 */
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { defaultConfigPath, intFlag, repoRoot, UsageError } from '../../src/basics.ts';
import type { Protocol } from '../ttfp/clients/BenchClient.ts';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** What parse gives back, named (the build emits declarations, and node's own name for it is not exported). */
type FlagValues<O extends OptionSpecs> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>
>['values'];

export function parse<const O extends OptionSpecs>(argv: string[], options: O): FlagValues<O> {
  return parseArgs({ args: argv, options, strict: true as const, allowPositionals: false as const }).values;
}

/** `chorus bench`'s flags without a subcommand (the TTFP bench and open-loop load), declared once. */
export const SERVE_OPTIONS = {
  config: { type: 'string' },
  url: { type: 'string' },
  'sync-url': { type: 'string' },
  'api-key': { type: 'string' },
  protocol: { type: 'string', default: 'realtime' },
  concurrency: { type: 'string' },
  'num-prompts': { type: 'string' },
  'input-len': { type: 'string' },
  'output-len': { type: 'string' },
  'max-tokens': { type: 'string' },
  'compare-sync': { type: 'boolean', default: false },
  'compare-config': { type: 'string' },
  'compare-scheduling': { type: 'boolean', default: false },
  'compare-prefix-cache': { type: 'boolean', default: false },
  'compare-compiled': { type: 'boolean', default: false },
  'redis-url': { type: 'string' },
  out: { type: 'string' },
  warmup: { type: 'string' },
  seed: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'skip-limit': { type: 'boolean', default: false },
  'skip-account': { type: 'boolean', default: false },
  'limit-repeats': { type: 'string' },
  json: { type: 'boolean', default: false },
  'initial-codec-chunk-frames': { type: 'string' },
  'ttfp-target-ms': { type: 'string' },
  'throughput-repeats': { type: 'string' },
  'trace-steps': { type: 'string' },
  goals: { type: 'boolean', default: false },
  'request-rate': { type: 'string' },
  burstiness: { type: 'string' },
  duration: { type: 'string' },
  'slo-ttfp-ms': { type: 'string' },
  'find-capacity': { type: 'boolean' },
  'slo-quantile': { type: 'string' },
  'capacity-multiples': { type: 'string' },
} as const;

/** What parse gives back for SERVE_OPTIONS: every reader of `chorus bench`'s flags takes it. */
export type ServeFlags = FlagValues<typeof SERVE_OPTIONS>;

/** An integer flag >= min, or `fallback` when absent. */
export function int(name: string, value: string | undefined, fallback: number, min = 1): number {
  return intFlag(`--${name}`, value, min) ?? fallback;
}

/** A number flag in [min, max], or `fallback` when absent. */
export function numberIn(name: string, value: string | undefined, fallback: number, min: number, max = Infinity) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a number in [${min}, ${max}], got "${value}"`);
  return n;
}

export function concurrencyOf(value: string): number[] {
  return value.split(',').map((c) => int('concurrency', c.trim(), 1));
}

export function protocolOf(value: string): Protocol {
  if (value === 'realtime' || value === 'chat') return value;
  throw new UsageError(`--protocol must be realtime or chat, got "${value}"`);
}

/** --output-len, or its other name --max-tokens (as chorus generate and soak call it); default 100. */
export function outputLenOf(v: ServeFlags): number {
  const [outputLen, maxTokens] = [v['output-len'], v['max-tokens']];
  if (outputLen !== undefined && maxTokens !== undefined && outputLen !== maxTokens)
    throw new UsageError(`--output-len ${outputLen} and --max-tokens ${maxTokens} are the same flag: give one`);
  return maxTokens !== undefined ? int('max-tokens', maxTokens, 100) : int('output-len', outputLen, 100);
}

export function checkRedisUrl(url: string): void {
  if (!/^(redis|rediss|redis\+clusters?):\/\//.test(url))
    throw new UsageError(`--redis-url must be a redis://, rediss:// or redis+cluster:// URL, got "${url}"`);
}

/** A running server (--url, with --sync-url and --api-key) or one the bench starts (--config), not both. */
export function targetOf(v: ServeFlags) {
  if (v.url !== undefined && v.config !== undefined)
    throw new UsageError('give either --url (a running server) or --config (the bench starts one), not both');
  if (v.url === undefined) return { kind: 'config' as const, file: path.resolve(v.config ?? defaultConfigPath()) };
  return {
    kind: 'url' as const,
    url: v.url.replace(/\/+$/, ''),
    ...(v['sync-url'] !== undefined ? { syncUrl: v['sync-url'].replace(/\/+$/, '') } : {}),
    apiKey: v['api-key'] ?? process.env.CHORUS_API_KEY ?? null,
  };
}

/** At most one --compare-* flag; --compare-compiled only where measured (the closed-loop TTFP bench). */
export function checkCompareFlags(v: ServeFlags, openLoop: boolean): void {
  if (v['compare-config'] !== undefined && v.url !== undefined)
    throw new UsageError('--compare-config is for --config: the bench starts both servers');
  const compares = [
    v['compare-sync'] === true,
    v['compare-config'] !== undefined,
    v['compare-scheduling'] === true,
    v['compare-prefix-cache'] === true,
    v['compare-compiled'] === true,
  ];
  if (compares.filter(Boolean).length > 1)
    throw new UsageError(
      'give one of --compare-sync, --compare-config, --compare-scheduling, --compare-prefix-cache and ' +
        '--compare-compiled',
    );
  const bothStarted = ['compare-scheduling', 'compare-prefix-cache'] as const;
  for (const flag of [...bothStarted, 'compare-compiled'] as const)
    if (v[flag] !== undefined && v[flag] !== false && v.url !== undefined)
      throw new UsageError(`--${flag} is for --config: the bench starts both servers`);
  if (v['compare-compiled'] === true && openLoop)
    throw new UsageError('--compare-compiled is for the closed-loop TTFP bench (not --request-rate)');
}

/** --out, or bench/results/<prefix>-<when the run started>. */
export function resultsDir(out: string | undefined, prefix: string, startedAt: string): string {
  return path.resolve(out ?? path.join(repoRoot(), 'bench', 'results', `${prefix}-${startedAt.replace(/[:.]/g, '-')}`));
}

/** The result as JSON (--json) or its text report to stdout; the files written to stderr. */
export function printReport(json: boolean | undefined, result: unknown, text: () => string, files: object): void {
  process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : `${text().replace(/\n$/, '')}\n`);
  process.stderr.write(`wrote ${Object.values(files).join(', ')}\n`);
}
