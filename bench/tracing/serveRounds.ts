/**
 * Two ways of serving one config compared in rounds, below the noise of a comparison of two servers up at once:
 * each round serves side A, then side B (the next round B, then A), each side a fresh `chorus serve` process tree
 * (main and its stage processes) started, warmed up, measured at every concurrency and stopped before the other
 * starts. So only one server is on the machine at a time, main does not share an event loop with the clients (they
 * run here), the collector stand-in runs in a process of its own, and a process's own luck (where its heap and its
 * weights landed, which varies a step's time by several percent between two identical servers) is drawn afresh every
 * round. Each round gives A over B per concurrency (CPU per request of the server's whole process tree, TTFP p50);
 * the report combines the rounds (pairedRatio.ts: geometric mean, 95% interval). An A/A run (`--a off --b off`) shows
 * what the method resolves on the machine at hand.
 *
 *   node --import tsx bench/tracing/serveRounds.ts [--config configs/tiny-omni-text-in.yaml] [--rounds 8]
 *     [--concurrency 1,10] [--num-prompts 40] [--input-len 100] [--output-len 100] [--a on] [--b off]
 *     [--a-dir DIR] [--b-dir DIR] [--json FILE]
 *
 * A side is `on` (traced: every span, 100% sampled, OTLP/HTTP JSON to the sink) or `off` (no OTEL_* at all), served
 * from a checkout (--a-dir / --b-dir, default this one: another commit's tree, e.g. a `git worktree`, measures a code
 * change; its `.chorus/models` may be a link to this one's, or it builds its models first). --config is read in each
 * checkout, relative to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMsOf } from '../../src/engine/processCpu.ts';
import { ChatBenchClient } from '../ttfp/clients/ChatBenchClient.ts';
import type { ClientTarget } from '../ttfp/clients/BenchClient.ts';
import { readBenchConfig } from '../ttfp/inProcessServer.ts';
import { summarizeRun } from '../ttfp/metrics.ts';
import { makePrompts } from '../ttfp/prompts.ts';
import { tokenizerOf } from '../ttfp/runServeBench.ts';
import { runLoad } from '../ttfp/runLoad.ts';
import { formatRatio, pairedRatio, type PairedRatio } from './pairedRatio.ts';

const REPO = path.resolve(import.meta.dirname, '../..');

const { values: args } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/tiny-omni-text-in.yaml' },
    rounds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '1,10' },
    'num-prompts': { type: 'string', default: '40' },
    'input-len': { type: 'string', default: '100' },
    'output-len': { type: 'string', default: '100' },
    a: { type: 'string', default: 'on' },
    b: { type: 'string', default: 'off' },
    'a-dir': { type: 'string', default: REPO },
    'b-dir': { type: 'string', default: REPO },
    json: { type: 'string' },
  },
});

type Tracing = 'on' | 'off';
interface Side {
  readonly name: 'A' | 'B';
  readonly tracing: Tracing;
  readonly dir: string;
}

function sideOf(name: 'A' | 'B', tracing: string, dir: string): Side {
  if (tracing !== 'on' && tracing !== 'off') throw new Error(`--${name.toLowerCase()} is on or off, not ${tracing}`);
  return { name, tracing, dir: path.resolve(dir) };
}

const sides = [sideOf('A', args.a, args['a-dir']), sideOf('B', args.b, args['b-dir'])] as const;
const rounds = Number(args.rounds);
const concurrencies = args.concurrency.split(',').map(Number);
const numPrompts = Number(args['num-prompts']);
const outputLen = Number(args['output-len']);
const progress = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/**
 * Every process started here: stopped as `chorus serve` wants (SIGTERM to its group, so it frees its shared memory)
 * when this run is interrupted, and killed outright if this process exits with any still up.
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
async function startChild(
  argv: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; ready: RegExp },
): Promise<{ child: ChildProcess; url: string }> {
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
  tryKill(-child.pid!, 'SIGTERM');
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
  readonly tpotMeanMs: number | null;
  readonly durationMs: number;
}

async function main(): Promise<void> {
  const sink = sides.some((s) => s.tracing === 'on')
    ? await startChild(['--import', 'tsx', path.join(REPO, 'bench/tracing/otlpSink.ts')], {
        cwd: REPO,
        env: process.env,
        ready: /otlp sink (http:\S+)/,
      })
    : null;
  const config = await readBenchConfig(path.resolve(sides[0].dir, args.config));
  const tokenizer = tokenizerOf(config.graph);
  const inputLen = Number(args['input-len']);
  const prompts = makePrompts({ tokenizer, count: numPrompts, inputLen, seed: 0 });
  const warmup = makePrompts({ tokenizer, count: 2 * Math.max(...concurrencies), inputLen, seed: 0x5eed });
  const measured: Measured[] = [];

  const serve = async (side: Side, round: number) => {
    const env: NodeJS.ProcessEnv = { ...process.env, CHORUS_LOG_LEVEL: 'warn' };
    for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
    if (side.tracing === 'on')
      Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: sink!.url, OTEL_TRACES_SAMPLER: 'always_on' });
    const server = await startChild(['bin/chorus.js', 'serve', '--config', args.config, '--port', '0'], {
      cwd: side.dir,
      env,
      ready: /serving (http:\/\/127\.0\.0\.1:\d+)/,
    });
    const target: ClientTarget = { baseUrl: server.url, apiKey: null };
    const load = (list: readonly string[], concurrency: number) =>
      runLoad({
        prompts: list,
        concurrency,
        outputLen,
        seed: 0,
        timeoutMs: 300_000,
        openClient: () => Promise.resolve(new ChatBenchClient(target)),
      });
    try {
      await load(warmup, Math.max(...concurrencies));
      for (const concurrency of concurrencies) {
        const before = treeCpu(server.child.pid!);
        const run = await load(prompts, concurrency);
        const cpuMs = cpuBetween(before, treeCpu(server.child.pid!));
        const m = summarizeRun(run.traces);
        if (m.failed > 0)
          throw new Error(`round ${round} side ${side.name}: ${m.failed} failed (${m.errors.join('; ')})`);
        const row: Measured = {
          round,
          side: side.name,
          concurrency,
          completed: m.completed,
          failed: m.failed,
          cpuMsPerRequest: cpuMs / m.completed,
          ttfpP50Ms: m.ttfp.p50,
          tpotMeanMs: m.tpot.mean,
          durationMs: run.durationMs,
        };
        measured.push(row);
        progress(
          `round ${round + 1}/${rounds} ${side.name} (${side.tracing}) c=${concurrency}: ` +
            `${row.cpuMsPerRequest.toFixed(1)} ms CPU a request, TTFP p50 ${row.ttfpP50Ms?.toFixed(1)} ms, ` +
            `TPOT ${row.tpotMeanMs?.toFixed(2)} ms, ${(run.durationMs / 1000).toFixed(1)} s`,
        );
      }
    } finally {
      await stopChild(server.child);
    }
  };

  try {
    for (let round = 0; round < rounds; round++)
      for (const side of round % 2 === 0 ? sides : [sides[1], sides[0]]) await serve(side, round);
  } finally {
    if (sink) await stopChild(sink.child);
  }

  const report: Record<string, { cpu: PairedRatio | null; ttfpP50: PairedRatio | null; tpot: PairedRatio | null }> = {};
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
      tpot: ratios((m) => m.tpotMeanMs),
    };
  }
  const describe = (s: Side) => `${s.tracing}${s.dir === REPO ? '' : ` (${path.relative(REPO, s.dir) || s.dir})`}`;
  process.stdout.write(
    `A = ${describe(sides[0])}, B = ${describe(sides[1])}, ${rounds} rounds, A over B ` +
      '(geometric mean of the rounds, [95% interval]):\n',
  );
  for (const [c, r] of Object.entries(report))
    process.stdout.write(
      `  ${c}: CPU per request ${formatRatio(r.cpu)}, TTFP p50 ${formatRatio(r.ttfpP50)}, ` +
        `TPOT ${formatRatio(r.tpot)}\n`,
    );
  if (args.json)
    writeFileSync(args.json, JSON.stringify({ sides, rounds, concurrencies, numPrompts, report, measured }, null, 2));
}

await main();
