/**
 * Which servers a run measures, from its target and its --compare-* option (at most one): with --config the bench
 * starts them (two variants of the YAML, or two YAMLs), with --url they are running already.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ByteTokenizer,
  ChorusError,
  entryTokenizer,
  ErrorCodes,
  type Logger,
  presets,
  type Tokenizer,
} from '../../src/index.ts';
import { readBenchConfig, type BenchConfig } from './inProcessServer.ts';
import type { Mode } from './modeRun.ts';
import { remoteStagesOf } from './RemoteStageHost.ts';
import type { BenchTarget, ServeBenchOptions } from './serveBenchOptions.ts';

type CompareOptions = Pick<
  ServeBenchOptions,
  'target' | 'compareSync' | 'compareScheduling' | 'compareConfig' | 'comparePrefixCache' | 'compareCompiled'
>;

const asyncName = (asyncChunk: boolean) => (asyncChunk ? 'async' : 'sync');

const configMode = (variant: string, config: BenchConfig): Mode => ({
  variant,
  asyncChunk: config.graph.asyncChunk,
  scheduling: config.graph.scheduling,
  config,
  url: null,
});

/**
 * The servers a run measures, from its target and its --compare-* option (one at most, and those that need both
 * servers started by the bench only with --config: cli/flags.ts checkCompareFlags has refused the rest).
 */
export async function planModes(o: CompareOptions): Promise<Mode[]> {
  const t = o.target;
  return t.kind === 'config' ? configModes(o, t.file) : urlModes(t, o.compareSync);
}

async function configModes(o: CompareOptions, file: string): Promise<Mode[]> {
  if (o.compareCompiled) return compiledModes(await readBenchConfig(file));
  if (o.compareConfig !== undefined) {
    const files = [file, o.compareConfig];
    const configs = await Promise.all(files.map((f) => readBenchConfig(f)));
    const [a, b] = configVariants(files);
    return [configMode(a, configs[0]), configMode(b, configs[1])];
  }
  if (!o.compareSync && !o.compareScheduling && !o.comparePrefixCache) {
    const config = await readBenchConfig(file);
    return [configMode(asyncName(config.graph.asyncChunk), config)];
  }
  const [first, second] = o.compareSync
    ? [{ async_chunk: true }, { async_chunk: false }]
    : o.comparePrefixCache
      ? [{}, { prefix_cache: false as const }]
      : [{ scheduling: 'playback' as const }, { scheduling: 'fifo' as const }];
  const flag = o.compareSync ? 'sync' : o.comparePrefixCache ? 'prefix-cache' : 'scheduling';
  const [a, b] = await Promise.all([readBenchConfig(file, first), readBenchConfig(file, second)]);
  // Refused before the limit and the first mode spend minutes: see RemoteStageHost.open.
  if (remoteStagesOf(a.graph).length > 0)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-${flag} runs a changed copy of ${file}, but its remote ` +
        'stages load the file as it is: write the variant to its own file and use --compare-config',
    );
  const names = o.compareSync ? ['async', 'sync'] : o.comparePrefixCache ? ['cache', 'no-cache'] : ['playback', 'fifo'];
  return [configMode(names[0], a), configMode(names[1], b)];
}

/** --url (and --sync-url with --compare-sync): running servers, described by their /v1/stages. */
async function urlModes(t: Extract<BenchTarget, { kind: 'url' }>, compareSync: boolean | undefined): Promise<Mode[]> {
  const urlMode = (url: string, asyncChunk: boolean): Mode => ({
    variant: asyncName(asyncChunk),
    asyncChunk,
    scheduling: null,
    config: null,
    url,
  });
  const main = await describe(t.url, t.apiKey);
  const modes = [urlMode(t.url, main.async_chunk)];
  if (!compareSync) return modes;
  if (!t.syncUrl)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      '--compare-sync with --url needs --sync-url URL of a server running async_chunk: false (or use --config, ' +
        'and the bench starts both)',
    );
  const sync = await describe(t.syncUrl, t.apiKey);
  if (main.async_chunk === sync.async_chunk)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--url and --sync-url both run async_chunk: ${main.async_chunk}; point them at an async and a sync server`,
    );
  return [...modes, urlMode(t.syncUrl, sync.async_chunk)];
}

/** The two configs' names in the results: file names without .yaml, or paths from here where those collide. */
function configVariants(files: readonly string[]): [string, string] {
  const [a, b] = files.map((f) => path.basename(f).replace(/\.ya?ml$/, ''));
  if (a !== b) return [a, b];
  const [ra, rb] = files.map((f) => path.relative(process.cwd(), f) || f);
  if (ra === rb) throw new ChorusError(ErrorCodes.REQUEST_INVALID, `--compare-config ${rb} is --config itself`);
  return [ra, rb];
}

interface StagesInfo {
  readonly async_chunk: boolean;
  readonly stages: readonly {
    readonly kind: string;
    readonly model: { readonly source: string; readonly preset?: string };
  }[];
}

async function describe(url: string, apiKey: string | null): Promise<StagesInfo> {
  let res: Response;
  try {
    res = await fetch(`${url}/v1/stages`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  } catch (cause) {
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `cannot reach ${url}: ${(cause as Error).message}; is \`chorus serve\` running there?`,
      { cause },
    );
  }
  if (!res.ok)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `GET ${url}/v1/stages answered HTTP ${res.status}; pass --api-key if the server needs one`,
    );
  return (await res.json()) as StagesInfo;
}

/** The tokenizer the prompts are counted with: the first mode's entry stage's, or a running server's. */
export async function benchTokenizer(
  o: Pick<ServeBenchOptions, 'target' | 'log'>,
  modes: readonly Mode[],
): Promise<Tokenizer> {
  const first = modes[0].config;
  return first
    ? entryTokenizer(first.graph)
    : remoteTokenizer(o.target as Extract<BenchTarget, { kind: 'url' }>, o.log);
}

/** A remote server's generated Thinker uses the byte tokenizer of its preset's vocabulary. */
async function remoteTokenizer(t: Extract<BenchTarget, { kind: 'url' }>, log: Logger): Promise<Tokenizer> {
  const info = await describe(t.url, t.apiKey);
  const thinker = info.stages.find((s) => s.kind === 'thinker');
  const preset = thinker?.model.preset !== undefined ? presets[thinker.model.preset] : undefined;
  if (preset) return new ByteTokenizer(preset.thinker.vocabSize);
  log.warn(
    'the server does not run a generated thinker preset: prompt lengths are counted with the tiny byte tokenizer ' +
      'and may differ on the server (results.json records the served prompt_tokens)',
  );
  return new ByteTokenizer(512);
}

/** --compare-compiled: the config's stage processes from dist/ and through tsx; refused without a build. */
function compiledModes(config: BenchConfig): Mode[] {
  const entry = new URL('../../dist/stages/stageEntry.js', import.meta.url);
  if (!existsSync(entry))
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-compiled starts stage processes from the build, and there is none (${fileURLToPath(entry)}): ` +
        'run `npm run build` first',
    );
  return [
    { ...configMode('compiled', config), compiled: true },
    { ...configMode('tsx', config), compiled: false },
  ];
}
