/**
 * `node [--cpu-prof] --import tsx bench/models/decodeSteps.ts [--preset tiny] [--batch 1,10] [--steps 300]` — the
 * Talker's and the Thinker's decode steps alone (100 positions of prompt, then --steps steps at each batch), with
 * the time the garbage collector took during the steps (perf_hooks 'gc' entries): what allocation-free steps are
 * measured by. Models come from the models cache (.chorus/models), so a profile holds the steps, not a build.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { cachedModelsDir, presetSpecs, stats, talkerSteps, thinkerSteps } from './runModelBench.ts';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    batch: { type: 'string', default: '1,10' },
    steps: { type: 'string', default: '300' },
  },
});
const steps = Number(values.steps);
const specs = presetSpecs(values.preset);
const engine = { threads: 1 };
const thinker = await createThinkerRunner({ model: specs.thinker, engine }, cachedModelsDir());
const talker = await createTalkerRunner({ model: specs.talker, engine }, cachedModelsDir());

let gcMs = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
});
observer.observe({ entryTypes: ['gc'] });
/** Runs the steps; returns ms per step (p50) and the GC share of the wall time they took. */
async function measure(run: () => number[]): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 100)); // deliver the earlier gc entries first
  const gcBefore = gcMs;
  const start = performance.now();
  const times = run();
  const wallMs = performance.now() - start;
  await new Promise((resolve) => setTimeout(resolve, 100)); // the observer hears of them a turn or two later
  const gc = gcMs - gcBefore;
  const share = ((100 * gc) / wallMs).toFixed(1);
  return `p50 ${stats(times).p50.toFixed(2)} ms/step, gc ${gc.toFixed(0)} of ${wallMs.toFixed(0)} ms = ${share}%`;
}

for (const batch of values.batch.split(',').map(Number)) {
  process.stdout.write(`talker  batch ${batch}: ${await measure(() => talkerSteps(talker, batch, steps, 'k'))}\n`);
  process.stdout.write(`thinker batch ${batch}: ${await measure(() => thinkerSteps(thinker, batch, steps, 't'))}\n`);
}
observer.disconnect();
await Promise.all([thinker.close(), talker.close()]);
