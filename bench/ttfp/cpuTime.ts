/**
 * CPU time per request of the processes that serve a run: each stage process the server's /health names on this
 * machine (Linux's /proc/<pid>/task/<tid>/schedstat, to the nanosecond, every thread: onnxruntime's, V8's, libuv's;
 * /proc/<pid>/stat's 10 ms ticks read a short run's few ms as 0), main's process when the bench started the server
 * (serverProcess.ts), and this process (process.cpuUsage: the bench's clients).
 *
 * On a machine whose cores the run keeps busy, req/s is the cores over the CPU one request costs the whole
 * deployment, so these figures say where a throughput goes: which process spends what, and what the cores allow
 * at that cost (`cpuBoundRps`). Against the throughput limit (bench/limit/runThroughput.ts), which charges each
 * stage only its models' time alone, `throughputCeiling` puts the bench's own CPU back: what the cores allow at
 * most when every stage runs as fast as alone and nothing else shares them.
 */
import { threadsCpuMsOf } from '../../src/basics.ts';
import type { ClientTarget } from './clients/BenchClient.ts';

/** The process the bench runs in: its clients (and the limit's runners, idle while a block runs). */
export const BENCH_PROCESS = 'bench';
/** The process of main (the Orchestrator and the front end) of a server the bench started. */
export const MAIN_PROCESS = 'main';

interface HealthStage {
  readonly stage_id: string;
  readonly replica: number;
  readonly pid: number | null;
  readonly instance?: string;
  readonly placement?: string;
}

/** A process's CPU ms now, keyed by a name and its pid (a stage restarted mid-run is another process). */
export type CpuSnapshot = ReadonlyMap<string, { readonly pid: number; readonly ms: number }>;

/** The stage processes of the server on this machine (a remote one's pid is another host's), by instance name. */
export async function localStages(target: ClientTarget): Promise<{ name: string; pid: number }[]> {
  try {
    const res = await fetch(`${target.baseUrl}/health`, {
      headers: target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {},
    });
    const body = (await res.json()) as { stages?: HealthStage[] };
    return (body.stages ?? [])
      .filter((s) => s.pid !== null && s.placement !== 'remote')
      .map((s) => ({ name: s.instance ?? `${s.stage_id}#${s.replica}`, pid: s.pid! }));
  } catch {
    return []; // a server without /health: the bench's own process still counts
  }
}

/** Every serving process's CPU now: the stages on this machine, main's (`mainPid`, when known) and the bench's. */
export async function cpuSnapshot(target: ClientTarget, mainPid?: number): Promise<CpuSnapshot> {
  const out = new Map<string, { pid: number; ms: number }>();
  const processes = await localStages(target);
  if (mainPid !== undefined) processes.push({ name: MAIN_PROCESS, pid: mainPid });
  for (const { name, pid } of processes) {
    const ms = threadsCpuMsOf(pid);
    if (ms !== null) out.set(name, { pid, ms });
  }
  const own = process.cpuUsage();
  out.set(BENCH_PROCESS, { pid: process.pid, ms: (own.user + own.system) / 1000 });
  return out;
}

/** CPU ms each process used between two snapshots (the ones in both, with the same pid), added to `into`. */
export function addCpuBetween(into: Map<string, number>, before: CpuSnapshot, after: CpuSnapshot): void {
  for (const [name, a] of after) {
    const b = before.get(name);
    if (b && b.pid === a.pid) into.set(name, (into.get(name) ?? 0) + a.ms - b.ms);
  }
}

/**
 * Requests per second the machine allows when each request costs `msPerRequest` of CPU (by process): the cores over
 * the sum, and no more than each stage process allows on the threads it computes on. A stage process runs its models
 * on its engine's intra-op threads (`threadsByStage`, by stage id; a process is named `<stage id>#<replica>`) and
 * its own code on the same thread, so its CPU a request over min(threads, cores) is the least time a request takes
 * it, however idle the other core is: the throughput limit bounds each stage alone the same way
 * (bench/limit/throughputLimit.ts, max(slowest stage, sum / cores)). Processes not named there (the bench's own, with
 * its garbage collector's threads) are charged only in the sum.
 */
export function cpuBoundRps(
  cores: number,
  msPerRequest: Readonly<Record<string, number>>,
  threadsByStage: ReadonlyMap<string, number> = new Map(),
): number | null {
  const total = Object.values(msPerRequest).reduce((a, x) => a + x, 0);
  if (total <= 0) return null;
  let boundMs = total / cores;
  for (const [name, ms] of Object.entries(msPerRequest)) {
    const threads = threadsByStage.get(name.replace(/#.*$/, ''));
    if (threads !== undefined) boundMs = Math.max(boundMs, ms / Math.min(Math.max(1, threads), cores));
  }
  return 1000 / boundMs;
}

/**
 * The most of the throughput limit `cores` allow once the processes beside the stages are charged too (main's and
 * the bench's): the limit's stage times (each stage alone, per request of its batch) plus their CPU per request, over
 * the cores,
 * as a share of the limit (1 when the cores leave the limit whole).
 */
export function throughputCeiling(
  limit: { readonly limit_rps: number; readonly cores: number },
  stagesMsPerRequest: number,
  besideMsPerRequest: number,
): number {
  const rps = (limit.cores * 1000) / (stagesMsPerRequest + besideMsPerRequest);
  return Math.min(1, rps / limit.limit_rps);
}
