/**
 * What a decode step costs as an answer grows: the pipeline's Thinker and Talker runners in this process (no stage
 * processes, no server), `--batch` sequences prefilled with `--prompt` positions and then decoded together one
 * position a step up to `--to` positions; the median step (ms) is printed at each power of two and at the end. A
 * step's cost grows with the positions its attention reads: this shows how fast (bench/NOTES.md, "Attention that
 * reads the past where it lies").
 *
 *   npx tsx bench/limit/stepsByContext.ts [--config configs/tiny-omni.yaml] [--batch 4] [--prompt 32] [--to 1600]
 */
import { loadConfig, type SamplingParams } from '../../src/index.ts';
import { percentile } from '../ttfp/metrics.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { closeRunners, limitSampling, openRunners, type Runners } from './runLimit.ts';

const v = pipelineFlags({ batch: 4, prompt: 32, to: 1600 });
if (!Number.isInteger(v.batch) || v.batch < 1) throw new Error('--batch must be an integer >= 1');
if (!Number.isInteger(v.prompt) || v.prompt < 1 || v.to <= v.prompt)
  throw new Error('--prompt must be an integer >= 1 and below --to');

/** One step of every sequence: `rows` new positions each (the prompt, then one). */
type Step = (rows: number) => void;

function thinkerStep(r: Runners, ids: readonly string[], sampling: SamplingParams): Step {
  let next = 0;
  return (rows) =>
    r.thinker.execute(
      ids.map((seqId) => {
        const tokenIds = Array.from({ length: rows }, () => 3 + (next++ % 200));
        return { seqId, tokenIds, numTokens: rows, sample: true, sampling };
      }),
    );
}

function talkerStep(r: Runners, ids: readonly string[], sampling: SamplingParams): Step {
  return (rows) => {
    const conditioning = new Float32Array(rows * r.talker.conditionDim).fill(0.01);
    r.talker.execute(ids.map((seqId) => ({ seqId, rows: conditioning, numRows: rows, sampling })));
  };
}

/** Prefill, then one position a step; the median step at each mark. */
function measure(name: string, step: Step): void {
  step(v.prompt);
  let times: number[] = [];
  let mark = 2 ** Math.ceil(Math.log2(v.prompt + 1));
  for (let positions = v.prompt + 1; positions <= v.to; positions++) {
    const t0 = performance.now();
    step(1);
    times.push(performance.now() - t0);
    if (positions === mark || positions === v.to) {
      const ms = percentile(times, 50).toFixed(2);
      console.log(`${name} batch ${v.batch}, ${String(positions).padStart(5)} positions: ${ms} ms a step`);
      times = [];
      mark *= 2;
    }
  }
}

const graph = await loadConfig(v.config);
const runners = await openRunners(graph);
try {
  const sampling = limitSampling(graph);
  const ids = (kind: string) => Array.from({ length: v.batch }, (_, i) => `${kind}-${i}`);
  measure('thinker', thinkerStep(runners, ids('thinker'), sampling.thinker));
  measure('talker', talkerStep(runners, ids('talker'), sampling.talker));
} finally {
  await closeRunners(runners);
}
