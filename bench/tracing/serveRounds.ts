/**
 * Two ways of serving one config compared in rounds, finely enough to resolve a few percent of CPU on a machine whose
 * speed drifts by more than that within minutes. Each round starts a fresh `chorus serve` process tree (main and its
 * stage processes) for each side, warms both, then at each concurrency runs each side's prompts in blocks of
 * --block-size (default: one wave of the concurrency), the sides' blocks alternated A B B A A B B A (so the machine's
 * drift, which on this machine moves CPU per request by tens of percent within minutes, falls on both alike), and stops
 * both. Main does
 * not share an event loop with the clients (they run here), the collector stand-in runs in a process of its own, and
 * a process's own luck (where its heap and weights landed: two identical servers' steps can differ by several
 * percent) is drawn afresh every round. Each round gives A over B per concurrency: CPU per request of each server's
 * whole process tree (/proc, every thread), TTFP p50, mean TPOT; the report combines the rounds (pairedRatio.ts:
 * geometric mean, 95% interval; and TTFP p50 over every round's requests pooled, with a bootstrap interval over rounds,
 * much narrower: a wave's p50 moves with the order its prefills land in). An A/A run (`--a off --b off`) shows what
 * the method resolves on the machine at hand. With --json, the file is rewritten after every round.
 *
 *   node --import tsx bench/tracing/serveRounds.ts [--config configs/tiny-omni-text-in.yaml] [--rounds 8]
 *     [--concurrency 1,10] [--num-prompts 40,120] [--block-size N] [--input-len 100] [--output-len 100] [--a on]
 *     [--b off] [--a-dir DIR] [--b-dir DIR] [--json FILE]
 *
 * --num-prompts: each side's prompts a round at each concurrency (one count for all, or one each). A side is `on`
 * (traced: every span, 100% sampled, OTLP/HTTP JSON to the sink) or `off` (no OTEL_* at all), served from a checkout
 * (--a-dir / --b-dir, default this one: another commit's tree, e.g. a `git worktree`, measures a code change; its
 * `.chorus/models` may be a link to this one's, or it builds its models first). --config is read in each checkout,
 * relative to it. Two servers differ by several percent whatever they run, so a few rounds cannot resolve less; the
 * sides `sampled` and `unsampled` share one traced server a round (the default parent-based sampler), their clients'
 * traceparents asking for a trace or not: what tracing a request costs, without two servers' luck in the ratio. Work
 * a side leaves for later (a stage makes its spans when idle, and under load once hundreds are noted) can fall in the
 * other side's next block: at a concurrency that keeps the stages busy, blocks of many waves (--block-size 100 at c=10)
 * keep that spill to the blocks' edges.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMsOf } from '../../src/basics.ts';
import { ChatBenchClient } from '../ttfp/clients/ChatBenchClient.ts';
import type { ClientTarget } from '../ttfp/clients/BenchClient.ts';
import { readBenchConfig } from '../ttfp/inProcessServer.ts';
import { requestMetrics, summarizeRun } from '../ttfp/metrics.ts';
import { makePrompts } from '../ttfp/prompts.ts';
import { tokenizerOf } from '../ttfp/planModes.ts';
import { runLoad } from '../ttfp/runLoad.ts';
import type { RequestTrace } from '../ttfp/trace.ts';
import { formatRatio, pairedRatio, pooledPercentileRatio, type PairedRatio } from './pairedRatio.ts';

const REPO = path.resolve(import.meta.dirname, '../..');

const { values: args } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/tiny-omni-text-in.yaml' },
    rounds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '1,10' },
    'num-prompts': { type: 'string', default: '40,120' },
    'input-len': { type: 'string', default: '100' },
    'output-len': { type: 'string', default: '100' },
    a: { type: 'string', default: 'on' },
    b: { type: 'string', default: 'off' },
    'a-dir': { type: 'string', default: REPO },
    'b-dir': { type: 'string', default: REPO },
    'block-size': { type: 'string' },
    json: { type: 'string' },
  },
});

/**
 * on: a traced server (every span, 100% sampled); off: an untraced one (no OTEL_*). sampled / unsampled: one traced
 * server under the default parent-based sampler, shared by both sides in a round, its clients' traceparents sampled
 * or not: the comparison without two servers' luck in it (an unsampled request costs main a span it does not record).
 */
type Tracing = 'on' | 'off' | 'sampled' | 'unsampled';
const TRACINGS: readonly string[] = ['on', 'off', 'sampled', 'unsampled'];
interface Side {
  readonly name: 'A' | 'B';
  readonly tracing: Tracing;
  readonly dir: string;
}

function sideOf(name: 'A' | 'B', tracing: string, dir: string): Side {
  if (!TRACINGS.includes(tracing))
    throw new Error(`--${name.toLowerCase()} is one of ${TRACINGS.join(', ')}, not ${tracing}`);
  return { name, tracing: tracing as Tracing, dir: path.resolve(dir) };
}

const sides = [sideOf('A', args.a, args['a-dir']), sideOf('B', args.b, args['b-dir'])] as const;
const sharesServer = (s: Side) => s.tracing === 'sampled' || s.tracing === 'unsampled';
if (sharesServer(sides[0]) !== sharesServer(sides[1]) || (sharesServer(sides[0]) && sides[0].dir !== sides[1].dir))
  throw new Error('sampled and unsampled sides share one server: give both (and one checkout), or neither');
const rounds = Number(args.rounds);
const concurrencies = args.concurrency.split(',').map(Number);
/** Prompts per concurrency: one count for all, or one each (a batch of 10 needs more requests to settle than 1). */
const numPrompts = args['num-prompts'].split(',').map(Number);
if (numPrompts.length !== 1 && numPrompts.length !== concurrencies.length)
  throw new Error('--num-prompts takes one count, or one per --concurrency');
const promptsAt = (k: number) => numPrompts[Math.min(k, numPrompts.length - 1)];
/**
 * Requests per block: by default one wave of the concurrency (a request at c=1, ten at c=10), so the sides alternate
 * every second or two and the machine's drift cannot fall on one of them. The CPU of a block is its process tree's
 * between two reads of /proc (10 ms ticks: noise that averages out over the blocks).
 */
const blockSize = (concurrency: number) => (args['block-size'] ? Number(args['block-size']) : concurrency);
const outputLen = Number(args['output-len']);
const progress = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/**
 * Every process started here: stopped as a user stops `chorus serve` (SIGTERM to it: it drains, stops its stage
 * processes and frees its shared memory) when this run is interrupted, and its whole group killed outright if it has
 * not left 30 s later or this process exits with any still up.
 */
const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started) if (child.pid) tryKill(-child.pid, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    void Promise.all([...started].map((c) => stopChild(c))).finally(() => process.exit(130));
  });

function tryKill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** A child in a process group of its own, and the first stdout line matching `ready` (its URL). */
interface Started {
  readonly child: ChildProcess;
  /** The address its first matching stdout line gave. */
  readonly url: string;
}

async function startChild(
  argv: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; ready: RegExp },
): Promise<Started> {
  const child = spawn(process.execPath, argv, { cwd: opts.cwd, env: opts.env, detached: true, stdio: 'pipe' });
  started.add(child);
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const take = (d: Buffer) => {
      out += d.toString();
      const m = opts.ready.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) =>
      reject(new Error(`${argv.join(' ')} exited with ${code} before it was ready:\n${out}`)),
    );
  });
  return { child, url };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return void started.delete(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  tryKill(child.pid!, 'SIGTERM');
  const timer = setTimeout(() => tryKill(-child.pid!, 'SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
  started.delete(child);
}

/** The pid and every descendant's (/proc/<pid>/task/<tid>/children), with their CPU ms now. */
function treeCpu(root: number): Map<number, number> {
  const out = new Map<number, number>();
  const visit = (pid: number) => {
    const ms = cpuMsOf(pid);
    if (ms === null) return;
    out.set(pid, ms);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of children.trim().split(/\s+/).filter(Boolean)) visit(Number(c));
    }
  };
  visit(root);
  return out;
}

function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, a] of after) {
    const b = before.get(pid);
    if (b === undefined) throw new Error(`process ${pid} appeared during a measured block: a stage restarted?`);
    ms += a - b;
  }
  return ms;
}

interface Measured {
  readonly round: number;
  readonly side: 'A' | 'B';
  readonly concurrency: number;
  readonly completed: number;
  readonly failed: number;
  readonly cpuMsPerRequest: number;
  readonly ttfpP50Ms: number | null;
  /** Every completed request's TTFP (for the p50 over all rounds pooled). */
  readonly ttfpsMs: readonly number[];
  readonly tpotMeanMs: number | null;
  readonly durationMs: number;
}

interface Report {
  readonly cpu: PairedRatio | null;
  readonly ttfpP50: PairedRatio | null;
  readonly ttfpP50Pooled: PairedRatio | null;
  readonly tpot: PairedRatio | null;
}

/** A over B at each concurrency, from the first `rounds` rounds measured. */
function reportOf(
  measured: readonly Measured[],
  rounds: number,
  concurrencies: readonly number[],
): Record<string, Report> {
  const report: Record<string, Report> = {};
  for (const concurrency of concurrencies) {
    const of = (round: number, side: 'A' | 'B') =>
      measured.find((m) => m.round === round && m.side === side && m.concurrency === concurrency)!;
    const ratios = (pick: (m: Measured) => number | null) =>
      pairedRatio(
        Array.from({ length: rounds }, (_, r) => {
          const [a, b] = [pick(of(r, 'A')), pick(of(r, 'B'))];
          return a !== null && b !== null ? a / b : NaN;
        }),
      );
    report[`c=${concurrency}`] = {
      cpu: ratios((m) => m.cpuMsPerRequest),
      ttfpP50: ratios((m) => m.ttfpP50Ms),
      ttfpP50Pooled: pooledPercentileRatio(
        Array.from({ length: rounds }, (_, r) => ({ a: of(r, 'A').ttfpsMs, b: of(r, 'B').ttfpsMs })),
      ),
      tpot: ratios((m) => m.tpotMeanMs),
    };
  }
  return report;
}

/** A side's server up (or the one it shares with the other side this round): where its clients go, and its load. */
async function openSide(side: Side, shared: Map<string, Started>, sink: Started | null) {
  const key = sharesServer(side) ? 'shared' : side.name;
  let server = shared.get(key);
  if (!server) {
    const env: NodeJS.ProcessEnv = { ...process.env, CHORUS_LOG_LEVEL: 'warn' };
    for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
    // Each process exports every OTEL_BSP_SCHEDULE_DELAY (the SDK's 5 s, as users get it: a shorter one costs more a
    // span), in whatever block runs then: with blocks of a second or two alternated, the export's CPU falls on both
    // sides about evenly, which understates the traced side by half the export's share (the profiles put the
    // export at 5-10% of tracing's own ~1%: under 0.1% of the CPU).
    if (side.tracing !== 'off')
      Object.assign(env, {
        OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url,
        OTEL_TRACES_SAMPLER: side.tracing === 'on' ? 'always_on' : 'parentbased_always_on',
      });
    server = await startChild(['bin/chorus.js', 'serve', '--config', args.config, '--port', '0'], {
      cwd: side.dir,
      env,
      ready: /serving (http:\/\/127\.0\.0\.1:\d+)/,
    });
    shared.set(key, server);
  }
  const target: ClientTarget = { baseUrl: server.url, apiKey: null };
  const sampled = side.tracing !== 'unsampled';
  const load = (list: readonly string[], concurrency: number) =>
    runLoad({
      prompts: list,
      concurrency,
      outputLen,
      seed: 0,
      timeoutMs: 300_000,
      openClient: () => Promise.resolve(new ChatBenchClient(target, sampled)),
    });
  return { side, server, load };
}

type Live = Awaited<ReturnType<typeof openSide>>;

/** One round: both sides warmed up, then each concurrency's prompts in blocks A B B A A B B A ... */
async function measureRound(
  round: number,
  lives: readonly [Live, Live],
  prompts: readonly string[],
  warmup: readonly string[],
  measured: Measured[],
): Promise<void> {
  for (const live of lives) await live.load(warmup, Math.max(...concurrencies));
  for (const [k, concurrency] of concurrencies.entries()) {
    const perBlock = blockSize(concurrency);
    const blocks = Math.ceil(promptsAt(k) / perBlock);
    const acc = new Map(lives.map((l) => [l, { cpuMs: 0, traces: [] as RequestTrace[], durationMs: 0 }]));
    // A B B A A B B A ...: each side's blocks sit as close in time to the other's as to its own.
    for (let j = 0; j < 2 * blocks; j++) {
      const live = lives[[0, 1, 1, 0][j % 4]];
      const block = Math.floor(j / 2);
      const before = treeCpu(live.server.child.pid!);
      const run = await live.load(prompts.slice(block * perBlock, (block + 1) * perBlock), concurrency);
      const a = acc.get(live)!;
      a.cpuMs += cpuBetween(before, treeCpu(live.server.child.pid!));
      a.traces.push(...run.traces);
      a.durationMs += run.durationMs;
    }
    for (const live of lives) {
      const a = acc.get(live)!;
      const m = summarizeRun(a.traces);
      if (m.failed > 0)
        throw new Error(`round ${round + 1} side ${live.side.name}: ${m.failed} failed (${m.errors.join('; ')})`);
      const row: Measured = {
        round,
        side: live.side.name,
        concurrency,
        completed: m.completed,
        failed: m.failed,
        cpuMsPerRequest: a.cpuMs / m.completed,
        ttfpP50Ms: m.ttfp.p50,
        ttfpsMs: a.traces.map((t) => requestMetrics(t).ttfpMs).filter((x): x is number => x !== null),
        tpotMeanMs: m.tpot.mean,
        durationMs: a.durationMs,
      };
      measured.push(row);
      progress(
        `round ${round + 1}/${rounds} ${live.side.name} (${live.side.tracing}) c=${concurrency}: ` +
          `${row.cpuMsPerRequest.toFixed(1)} ms CPU a request, TTFP p50 ${row.ttfpP50Ms?.toFixed(1)} ms, ` +
          `TPOT ${row.tpotMeanMs?.toFixed(2)} ms, ${(a.durationMs / 1000).toFixed(1)} s`,
      );
    }
  }
}

function writeJson(file: string, measured: readonly Measured[], done: number): void {
  const report = reportOf(measured, done, concurrencies);
  writeFileSync(file, JSON.stringify({ sides, rounds: done, concurrencies, numPrompts, report, measured }, null, 2));
}

/** A over B at each concurrency, to stdout. */
function printRatios(measured: readonly Measured[]): void {
  const report = reportOf(measured, rounds, concurrencies);
  const describe = (s: Side) => `${s.tracing}${s.dir === REPO ? '' : ` (${path.relative(REPO, s.dir) || s.dir})`}`;
  process.stdout.write(
    `A = ${describe(sides[0])}, B = ${describe(sides[1])}, ${rounds} rounds, A over B ` +
      '(geometric mean of the rounds, [95% interval]):\n',
  );
  for (const [c, r] of Object.entries(report))
    process.stdout.write(
      `  ${c}: CPU per request ${formatRatio(r.cpu)}, TTFP p50 ${formatRatio(r.ttfpP50)} ` +
        `(over all rounds' requests pooled: ${formatRatio(r.ttfpP50Pooled)}), TPOT ${formatRatio(r.tpot)}\n`,
    );
}

async function main(): Promise<void> {
  const sink = sides.some((s) => s.tracing !== 'off')
    ? await startChild(['--import', 'tsx', path.join(REPO, 'bench/tracing/otlpSink.ts')], {
        cwd: REPO,
        env: process.env,
        ready: /otlp sink (http:\S+)/,
      })
    : null;
  const config = await readBenchConfig(path.resolve(sides[0].dir, args.config));
  const tokenizer = tokenizerOf(config.graph);
  const inputLen = Number(args['input-len']);
  const prompts = makePrompts({ tokenizer, count: Math.max(...numPrompts), inputLen, seed: 0 });
  const warmup = makePrompts({ tokenizer, count: 2 * Math.max(...concurrencies), inputLen, seed: 0x5eed });
  const measured: Measured[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      // Each round a fresh pair, the side that starts (and is opened first) alternating.
      const order = round % 2 === 0 ? sides : ([sides[1], sides[0]] as const);
      const servers = new Map<string, Started>();
      try {
        const lives: Live[] = [];
        for (const side of order) lives.push(await openSide(side, servers, sink));
        await measureRound(round, lives as [Live, Live], prompts, warmup, measured);
        // What the rounds so far show, kept as they finish (a run stopped early still leaves its data).
        if (args.json) writeJson(args.json, measured, round + 1);
      } finally {
        await Promise.all([...servers.values()].map((server) => stopChild(server.child)));
      }
    }
  } finally {
    if (sink) await stopChild(sink.child);
  }
  printRatios(measured);
  if (args.json) writeJson(args.json, measured, rounds);
}

await main();
