/**
 * Where the deployment's processes run (`engine.cpus`): a stage that names cores runs on them, and every other
 * process (main, the stages without `cpus`) runs on the cores no stage named, so a stage's cores are its own. On two
 * cores, the Talker (the bottleneck stage) on a core of its own: c=10 TTFP -30%, req/s +7-20% in alternated runs
 * (bench/README.md, "Cores of its own for the Talker"). Set with util-linux's `taskset` on every thread of the
 * process; threads started later (onnxruntime's, at model load) inherit it from their creator. Not being able to
 * set it costs speed only: it is logged, not fatal (like stage_nice).
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { StageGraph, StageSpec } from './graph.ts';
import type { Logger } from './log.ts';

/** Every core of this machine, ascending. */
const everyCore = (): number[] => Array.from({ length: os.availableParallelism() }, (_, cpu) => cpu);

/** The cores some stage of the graph reserved, ascending. */
export function reservedCpus(graph: Pick<StageGraph, 'stages'>): number[] {
  return [...new Set(graph.stages.flatMap((s) => s.engine.cpus ?? []))].sort((a, b) => a - b);
}

/**
 * The cores a process of this graph runs on: the stage's own `cpus`, else (main: stage null) the cores nobody
 * reserved; null when the graph reserves none (the OS places everything).
 */
export function cpusFor(graph: Pick<StageGraph, 'stages'>, stage: Pick<StageSpec, 'engine'> | null): number[] | null {
  if (stage?.engine.cpus) return [...stage.engine.cpus];
  const reserved = new Set(reservedCpus(graph));
  if (reserved.size === 0) return null;
  return everyCore().filter((cpu) => !reserved.has(cpu));
}

let pinned = false;

/**
 * Puts every thread of this process on `cpus` (null: on every core again if an earlier graph had pinned it, else
 * nothing). Returns whether the affinity was set.
 */
export function pinThisProcess(cpus: readonly number[] | null, log: Logger): boolean {
  if (cpus === null && !pinned) return false;
  const list = (cpus ?? everyCore()).join(',');
  try {
    execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', list, String(process.pid)], { stdio: 'ignore' });
  } catch (err) {
    log.warn({ err, cpus: list }, 'could not set the CPU affinity of engine.cpus (taskset from util-linux is needed)');
    return false;
  }
  pinned = cpus !== null;
  log.info({ cpus: list }, 'running on these cores');
  return true;
}
