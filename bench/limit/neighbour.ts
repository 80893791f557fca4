/**
 * Does what runs on the other core slow the models? (issue 46: quiet, the pipeline's models computed a first packet at
 * 1.37x the limit's CPU; under load both are that slow, so only a quiet machine answers this.) The limit's packet
 * (runLimit.ts) runs pinned to core 0 while a neighbour process on core 1 does one thing per arm, interleaved by
 * round: `none` (it exits at once: core 1 idles), `timer` (wakes every 10 ms and does nothing, as main's event-loop
 * monitor does in every Chorus server), `spin` (a scalar busy loop), `model` (the Talker's decode steps back to back,
 * as a stage beside the first packet). Prints each arm's median CPU per packet (ms) and its ratio to the first arm.
 *
 *   node --import tsx bench/limit/neighbour.ts [--config FILE] [--rounds 10] [--arms none,timer,spin,model]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { initialChunkFrames, loadConfig } from '../../src/index.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { percentile } from '../ttfp/metrics.ts';
import { closeRunners, firstPacket, limitSampling, openRunners, templatedPrompts } from './runLimit.ts';

const flags = pipelineFlags({ rounds: 10, arms: 'none,timer,spin,model', role: '', 'input-len': 100 });
const graph = await loadConfig(flags.config);
const live = new Set<ChildProcess>();

/** The neighbour's work for `role` until its parent kills it (`none`: nothing, it exits). */
async function neighbour(role: string): Promise<void> {
  if (role === 'timer') setInterval(() => {}, 10);
  else if (role === 'spin') for (;;);
  else if (role === 'model') {
    const { talker } = await openRunners(graph);
    const [rows, sampling] = [new Float32Array(talker.conditionDim), limitSampling(graph).talker];
    for (let n = 0; ; talker.free(`n-${n++}`))
      for (let k = 0; k < 200; k++) talker.execute([{ seqId: `n-${n}`, rows, numRows: 1, sampling }]);
  }
}

/** Pins a process (every thread) to `cpu` with util-linux's taskset, as src/common/affinity.ts pins a stage. */
const pinTo = (cpu: number, pid = process.pid) => execFileSync('taskset', ['-a', '-p', '-c', `${cpu}`, `${pid}`]);

/** Starts the neighbour of `arm` on core 1; resolves after the same settling time for every arm (`model` loads). */
function startNeighbour(arm: string): Promise<ChildProcess> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), '--config', flags.config, '--role', arm];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  live.add(child);
  if (arm !== 'none') pinTo(1, child.pid);
  return new Promise((resolve) => setTimeout(() => resolve(child), 3000));
}

if (flags.role) await neighbour(flags.role);
else {
  process.once('exit', () => live.forEach((c) => c.kill('SIGKILL'))); // also when the probe fails
  pinTo(0);
  const runners = await openRunners(graph);
  const [prompts, sampling] = [templatedPrompts(graph, 1, flags['input-len']), limitSampling(graph)];
  const [ic, arms] = [initialChunkFrames(graph.chunkPolicy, 1), flags.arms.split(',')];
  const cpu = new Map<string, number[]>(arms.map((a) => [a, []]));
  for (let round = 0; round < flags.rounds; round++)
    for (const arm of arms) {
      const child = await startNeighbour(arm);
      for (let i = 0; i < 8; i++) {
        const parts = firstPacket(runners, graph, prompts, ic, sampling, `nb-${round}-${arm}-${i}`);
        if (i >= 3) cpu.get(arm)!.push(parts.cpu_ms ?? Number.NaN); // the first 3 warm the packet's own caches
      }
      child.kill('SIGKILL'); // `live` keeps it: killing an ended child again does nothing
    }
  await closeRunners(runners);
  const med = (arm: string) => percentile(cpu.get(arm)!, 50);
  console.log(`the limit's packet on core 0 (IC ${ic}), ${flags.rounds} rounds x 5 packets, load ${os.loadavg()[0]}`);
  for (const arm of arms)
    console.log(`  ${arm.padEnd(6)} CPU a packet ${med(arm).toFixed(2)} ms, ${(med(arm) / med(arms[0])).toFixed(3)}x`);
}
