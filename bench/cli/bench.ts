/**
 * `chorus bench`            TTFP, TTFT, TPOT, ITL, E2E, RTF and underruns across concurrency (bench/ttfp)
 * `chorus bench limit`      the critical path of the first audio packet on the bare runners (bench/limit)
 *
 * Tables go to stdout, the progress bar to stderr. Goals are reported, never turned into an exit code; failed
 * requests are (exit 1), since their run's numbers describe fewer requests than asked for.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
// The light entry: the package itself (src/index.ts) loads with the command's run, after its flags are checked.
import { defaultConfigPath, UsageError, logger, STEP_TRACE_ENV } from '../../src/basics.ts';
import {
  checkCompareFlags,
  checkRedisUrl,
  concurrencyOf,
  int,
  outputLenOf,
  parse,
  printReport,
  protocolOf,
  resultsDir,
  SERVE_OPTIONS,
  type ServeFlags,
  targetOf,
} from './flags.ts';
import { mixUsage, runMixCommand } from './mix.ts';
import { openLoopFlags, openLoopHelp, openLoopUsage, runOpenLoopCommand } from './openLoop.ts';
import type { RunRow } from '../ttfp/results.ts';
import type { RequestTrace } from '../ttfp/trace.ts';
import type { ServerTimingLookup } from '../ttfp/ServerTimings.ts';
import { benchLogger } from '../benchLogger.ts';
import { writeResultFiles } from '../report/writeResultFiles.ts';

/**
 * Unmeasured requests each server answers first. A server's first requests run its per-request code cold in every
 * process (main's work before the add 1.46-1.75 ms over its first ten, ~1.05 after): with 2, the first of the two
 * blocks a c=1 run is measured in (requests 3-8 of the server's life) came 1.86 ms slower than the second; with 10,
 * 0.62 ms (seven alternated pairs of the issue 46 command; bench/NOTES.md, "The bench's warm-up").
 */
export const DEFAULT_WARMUP = 10;

export const usage = `usage:
  chorus bench [--config FILE | --url URL [--sync-url URL] [--api-key KEY]] [--protocol realtime|chat]
               [--concurrency 1,4,10] [--num-prompts 50] [--input-len 100] [--output-len 100]
               [--compare-sync | --compare-config FILE | --compare-scheduling | --compare-prefix-cache
                | --compare-compiled] [--redis-url URL] [--out DIR]
               [--warmup ${DEFAULT_WARMUP}] [--seed 0] [--timeout-ms 300000] [--skip-limit] [--limit-repeats 20]
               [--throughput-repeats 5] [--initial-codec-chunk-frames N] [--ttfp-target-ms MS] [--trace-steps DIR]
               [--skip-account] [--goals] [--json]
${openLoopUsage.trimEnd()}
${mixUsage.trimEnd()}
  chorus bench limit [--config FILE] [--input-len 100] [--repeats 20] [--seed 0] [--batch 1]
                     [--initial-chunk-frames N] [--json]

--config (the default, configs/tiny-omni.yaml) starts the pipeline and its server in a process of its own (as
\`chorus serve\` runs); --compare-sync then also runs the same YAML with async_chunk: false; --compare-config FILE
runs FILE after it and reports the ratios of --config over FILE; --compare-scheduling runs the YAML with
scheduling: playback, then fifo (underruns and worst stall of each, runs[].scheduling); --compare-prefix-cache runs
the YAML as it is ("cache") and with every stage's engine.prefix_cache off ("no-cache"); --compare-compiled runs it
with every stage process started from the build in dist/ (\`npm run build\` first) and through tsx. Two servers
compared run at once, each concurrency's prompts in halves A B B A, so that the machine's drift falls on both alike
(remote stages: one after the other).
--url measures a running server.
--ttfp-target-ms sends that TTFP target with every request and reports the share of requests that met it.
${openLoopHelp}\
--trace-steps DIR: every stage process writes each step it runs to DIR (bench/ttfp/stepTimeline.ts shows where a
request's first packet waited, from those files and requests.json). With --config the bench always keeps step traces
(in a temporary folder unless --trace-steps names one) for the c=1 runs' first-packet account: where each millisecond
from a request's send to its first audio went, and a steady-state chunk's trip (--skip-account: no account, no
traces).
A config with remote stages (placement: remote, e.g. configs/two-host.yaml) runs as on two hosts: the bench starts
min_replicas \`chorus stage\` processes per remote stage and waits for them to join, over --redis-url (or
CHORUS_REDIS_URL), else over a redis-server it starts on loopback for the run; it stops them all at the end.
Results go to DIR (default bench/results/run-<time>): results.json, results.md (the wide tables) and
requests.json (every request's metrics and audio arrivals, for tracing a slow first packet or a stall); the terminal
gets a summary per run. --goals adds the development goals of bench/README.md, met or not, to both reports.
--mix: a seeded mixed workload (text, 224-1080 px images, 5-30 s clips, some repeated) against --config
(default configs/epd.yaml) once per --router, each on a fresh deployment; TTFT p50/p99 per modality, encoder cache hit
rate and encoder busy time, in Markdown (bench/README.md "Disaggregated encoders").
Harnesses of closed issues (the connector microbench, tracing rounds, spoken turns against typed ones,
conversations by turn, the grammar, model and Piper benches) were archived: bench/README.md, "Archived harnesses",
runs them from the tag bench-archive-2026-12-02.
`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return 0;
  }
  // Stage processes inherit the environment: keep their start-up chatter out of the tables unless asked for.
  process.env.CHORUS_LOG_LEVEL ??= 'warn';
  logger.level = process.env.CHORUS_LOG_LEVEL;
  const [sub, ...rest] = argv;
  if (sub === 'limit') return runLimitCommand(rest);
  refuseArchived(argv);
  if (sub !== undefined && !sub.startsWith('-'))
    throw new UsageError(`chorus bench has no subcommand "${sub}" (only limit)`);
  if (argv.some((a) => a === '--mix' || a.startsWith('--mix='))) return runMixCommand(argv);
  return runServeCommand(argv);
}

/** `chorus bench` without a subcommand: the TTFP bench, or open-loop load (--request-rate). */
async function runServeCommand(argv: string[]): Promise<number> {
  const v = parse(argv, SERVE_OPTIONS);
  const openLoop = openLoopFlags(v);
  checkCompareFlags(v, openLoop !== null);
  const shared = sharedOptions(v, argv);
  if (openLoop === null) return runTtfpCommand(v, shared);
  const results = { out: v.out, json: v.json === true };
  return runOpenLoopCommand({ ...shared, ...openLoop, ...results, inputLen: int('input-len', v['input-len'], 100) });
}

/** What a Ctrl-C or a kill sends: the run's temporary files are removed before the bench exits. */
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** What harnesses of closed issues took with them (bench/README.md, "Archived harnesses"). */
const ARCHIVED = [
  'transport',
  '--voice',
  '--turns',
  '--system-len',
  '--compare-routing',
  '--compare-tracing',
  '--compare-transcription',
];

function refuseArchived(argv: readonly string[]): void {
  const hit = argv.map((a) => a.split('=')[0]).find((a) => ARCHIVED.includes(a));
  if (hit !== undefined)
    throw new UsageError(
      `chorus bench ${hit} was archived with its closed issue: bench/README.md, "Archived harnesses", runs it ` +
        'from the tag bench-archive-2026-12-02',
    );
}

/** The options every `chorus bench` load shares: the target, the compared servers, the requests' shape. */
function sharedOptions(v: ServeFlags, argv: string[]) {
  if (v['redis-url'] !== undefined) checkRedisUrl(v['redis-url']);
  // Stage processes inherit the environment: each one then records its steps there (src/worker/StepTrace.ts).
  if (v['trace-steps'] !== undefined) process.env[STEP_TRACE_ENV] = path.resolve(v['trace-steps']);
  const optionalInt = (name: 'initial-codec-chunk-frames' | 'ttfp-target-ms') =>
    v[name] === undefined ? undefined : int(name, v[name], 1);
  const initialCodecChunkFrames = optionalInt('initial-codec-chunk-frames');
  const ttfpTargetMs = optionalInt('ttfp-target-ms');
  return {
    target: targetOf(v),
    protocol: protocolOf(v.protocol),
    concurrency: concurrencyOf(v.concurrency ?? '1,4,10'),
    outputLen: outputLenOf(v),
    warmup: int('warmup', v.warmup, DEFAULT_WARMUP, 0),
    seed: int('seed', v.seed, 0, 0),
    compareSync: v['compare-sync'] === true,
    compareScheduling: v['compare-scheduling'] === true,
    comparePrefixCache: v['compare-prefix-cache'] === true,
    compareCompiled: v['compare-compiled'] === true,
    ...(v['compare-config'] !== undefined ? { compareConfig: path.resolve(v['compare-config']) } : {}),
    ...(v['redis-url'] !== undefined ? { redisUrl: v['redis-url'] } : {}),
    ...(initialCodecChunkFrames !== undefined ? { initialCodecChunkFrames } : {}),
    ...(ttfpTargetMs !== undefined ? { ttfpTargetMs } : {}),
    timeoutMs: int('timeout-ms', v['timeout-ms'], 300_000),
    progress: process.stderr,
    log: benchLogger(process.stderr),
    command: `chorus bench ${argv.join(' ')}`.trim(),
  };
}

/** The closed-loop TTFP bench: results.json, results.md and requests.json to --out DIR. */
async function runTtfpCommand(v: ServeFlags, shared: ReturnType<typeof sharedOptions>): Promise<number> {
  const requests: unknown[] = [];
  // The flags are read before the bench's modules load: a bad one fails at once, not after seconds of imports.
  const options = {
    ...shared,
    numPrompts: int('num-prompts', v['num-prompts'], 50),
    inputLen: int('input-len', v['input-len'], 100),
    limit: v['skip-limit'] !== true,
    limitRepeats: int('limit-repeats', v['limit-repeats'], 20),
    throughputRepeats: int('throughput-repeats', v['throughput-repeats'], 5),
    onRun: (row: RunRow, traces: readonly RequestTrace[], timings: ServerTimingLookup | null) =>
      requests.push(...requestDetails(row, traces, timings)),
  };
  const { runServeBench } = await import('../ttfp/runServeBench.ts');
  const { formatReport } = await import('../ttfp/report/formatReport.ts');
  const { requestDetails } = await import('../ttfp/report/requestDetails.ts');
  // The first-packet account reads the stage processes' step traces: on for the servers it starts unless skipped.
  const ownSteps =
    v['trace-steps'] === undefined && shared.target.kind === 'config' && v['skip-account'] !== true
      ? await mkdtemp(path.join(os.tmpdir(), 'chorus-account-'))
      : undefined;
  if (ownSteps !== undefined) process.env[STEP_TRACE_ENV] = ownSteps;
  const stepTraceDir = ownSteps ?? (v['skip-account'] === true ? undefined : process.env[STEP_TRACE_ENV]);
  // A Ctrl-C mid-run: the step traces go with it (the servers, in their own processes, stop their stages themselves).
  const interrupted = () => {
    if (ownSteps !== undefined) rmSync(ownSteps, { recursive: true, force: true });
    process.exit(130);
  };
  for (const signal of SIGNALS) process.once(signal, interrupted);
  const result = await runServeBench({ ...options, ...(stepTraceDir !== undefined ? { stepTraceDir } : {}) }).finally(
    async () => {
      for (const signal of SIGNALS) process.off(signal, interrupted);
      if (ownSteps === undefined) return;
      delete process.env[STEP_TRACE_ENV];
      await rm(ownSteps, { recursive: true, force: true });
    },
  );
  const out = resultsDir(v.out, 'run', result.started_at);
  const report = { goals: v.goals === true };
  const markdown = formatReport(result, report);
  const files = await writeResultFiles(out, result, markdown, { requests });
  printReport(v.json, result, () => markdown, files);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}

async function runLimitCommand(argv: string[]): Promise<number> {
  const v = parse(argv, {
    config: { type: 'string' },
    'input-len': { type: 'string' },
    repeats: { type: 'string' },
    seed: { type: 'string' },
    'initial-chunk-frames': { type: 'string' },
    batch: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const ic = v['initial-chunk-frames'];
  // Read before the modules load and the config is read, as the TTFP bench's flags are.
  const options = {
    inputLen: int('input-len', v['input-len'], 100),
    repeats: int('repeats', v.repeats, 20),
    seed: int('seed', v.seed, 0, 0),
    batch: int('batch', v.batch, 1),
    ...(ic !== undefined ? { initialChunkFrames: int('initial-chunk-frames', ic, 1) } : {}),
  };
  const { runLimit } = await import('../limit/runLimit.ts');
  const { formatLimit } = await import('../limit/limitResult.ts');
  const { loadConfig } = await import('../../src/index.ts');
  const result = await runLimit({ graph: await loadConfig(v.config ?? defaultConfigPath()), ...options });
  process.stdout.write(v.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatLimit(result)}\n`);
  return 0;
}
