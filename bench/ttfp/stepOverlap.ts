/**
 * `node --import tsx bench/ttfp/stepOverlap.ts --steps DIR [--stage talker] [--beside thinker] [--batch 10]` — how
 * long one stage's decode steps (one position per request) at a batch size took, split by how much of each step
 * another stage was computing at the same time (from `chorus bench --trace-steps DIR`). If co-running slowed the
 * steps, the overlapped ones are the slow ones (bench/README.md, "Where c=10's throughput goes").
 */
import { parseArgs } from 'node:util';
import type { StepRecord } from '../../src/worker/StepTrace.ts';
import { percentile } from './metrics.ts';
import { readStepTraces } from './report/stepTraces.ts';

const { values } = parseArgs({
  options: {
    steps: { type: 'string' },
    stage: { type: 'string', default: 'talker' },
    beside: { type: 'string', default: 'thinker' },
    batch: { type: 'string', default: '10' },
  },
});
if (!values.steps) throw new Error('give --steps DIR (from chorus bench --trace-steps DIR)');
const traces = await readStepTraces(values.steps);
const stepsOf = (stage: string): readonly StepRecord[] => {
  const s = traces.find((t) => t.stage === stage);
  if (!s) throw new Error(`no steps of ${stage} in ${values.steps} (stages: ${traces.map((t) => t.stage).join(', ')})`);
  return s.steps;
};
const batch = Number(values.batch);
const other = stepsOf(values.beside); // sorted by start
/** Milliseconds of [from, to) during which a step of the other stage ran. */
function overlapMs(from: number, to: number): number {
  let sum = 0;
  for (const s of other) {
    if (s.t >= to) break;
    sum += Math.max(0, Math.min(to, s.t + s.d) - Math.max(from, s.t));
  }
  return sum;
}
const buckets: [string, number, number[]][] = [
  ['< 10%', 0.1, []],
  ['10-50%', 0.5, []],
  ['50-90%', 0.9, []],
  ['>= 90%', Infinity, []],
];
for (const s of stepsOf(values.stage)) {
  if (s.items.length !== batch || s.items.some(([, positions]) => positions !== 1)) continue;
  const share = overlapMs(s.t, s.t + s.d) / s.d;
  buckets.find(([, below]) => share < below)![2].push(s.d);
}
console.log(
  `${values.stage} decode steps at batch ${batch}, by the share of each that a ${values.beside} step overlapped`,
);
for (const [name, , ms] of buckets) {
  if (ms.length === 0) continue;
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  console.log(
    `  ${name.padEnd(7)} ${String(ms.length).padStart(5)} steps  p50 ${percentile(ms, 50).toFixed(2)} ms  ` +
      `mean ${mean.toFixed(2)} ms`,
  );
}
