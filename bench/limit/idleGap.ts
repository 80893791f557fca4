/**
 * Does a first packet cost more after the process sat idle? The c=1 limit (runLimit.ts) runs its packets back to back
 * on a busy core; in the pipeline every stage of a c=1 request starts from sleep (the Thinker slept through the whole
 * previous answer's speech). This runs the limit's packet on the same runners in three arms, interleaved by round:
 * `hot` (right after another packet, as the limit), `idle` (after --gap-ms asleep: on this VM an idle vCPU halts at
 * once) and `busy` (after --gap-ms of a JavaScript busy loop: awake, its caches not the models'). Prints each arm's
 * median parts, wall and the process's CPU time per packet, and idle / hot.
 *
 *   node --import tsx bench/limit/idleGap.ts [--config FILE] [--rounds 15] [--gap-ms 500] [--input-len 100]
 */
import { initialChunkFrames, loadConfig } from '../../src/index.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { percentile } from '../ttfp/metrics.ts';
import { closeRunners, firstPacket, limitSampling, openRunners, templatedPrompts } from './runLimit.ts';

const flags = pipelineFlags({ rounds: 15, 'gap-ms': 500, 'input-len': 100 });
const graph = await loadConfig(flags.config);
const runners = await openRunners(graph);
const prompts = templatedPrompts(graph, 1, flags['input-len']);
const sampling = limitSampling(graph);
const ic = initialChunkFrames(graph.chunkPolicy, 1);
const gapMs = flags['gap-ms'];

const arms: Record<string, () => Promise<void>> = {
  hot: async () => {},
  idle: () => new Promise((resolve) => setTimeout(resolve, gapMs)),
  busy: async () => {
    for (const end = performance.now() + gapMs; performance.now() < end;);
  },
};

let n = 0;
const packet = () => firstPacket(runners, graph, prompts, ic, sampling, `gap-${n++}`);
const samples = new Map<string, Record<string, number>[]>();
try {
  for (let i = 0; i < 3; i++) packet();
  for (let round = 0; round < flags.rounds; round++)
    for (const [arm, before] of Object.entries(arms)) {
      packet(); // every arm starts from a packet just run: only what comes between differs
      await before();
      const t0 = performance.now();
      const parts = packet();
      samples.set(arm, [...(samples.get(arm) ?? []), { ...parts, wall_ms: performance.now() - t0 }]);
    }
} finally {
  await closeRunners(runners);
}

const median = (arm: string, key: string) =>
  percentile(
    samples.get(arm)!.map((s) => s[key]),
    50,
  );
console.log(`the limit's packet (IC ${ic}), medians of ${flags.rounds} rounds, ${gapMs} ms gaps (ms):`);
for (const arm of Object.keys(arms)) {
  const keys = Object.keys(samples.get(arm)![0]);
  console.log(
    `  ${arm.padEnd(5)} ${keys.map((k) => `${k.replace(/_ms$/, '')} ${median(arm, k).toFixed(2)}`).join('  ')}`,
  );
}
const ratio = (arm: string) => (median(arm, 'total_ms') / median('hot', 'total_ms')).toFixed(3);
console.log(`  total / hot: idle ${ratio('idle')}, busy ${ratio('busy')}`);
