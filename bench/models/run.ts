/**
 * `node --import tsx bench/models/run.ts [--preset tiny|omni] [--threads N] [--batch N] [--tokens N] [--json]`
 * — builds the preset's models in a temp folder and prints the model-layer figures (or JSON).
 */
import { parseArgs } from 'node:util';
import { formatModelBench, runModelBench } from './runModelBench.ts';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    threads: { type: 'string' },
    batch: { type: 'string' },
    tokens: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
const result = await runModelBench({
  preset: values.preset,
  threads: num(values.threads),
  batch: num(values.batch),
  answerTokens: num(values.tokens),
});
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatModelBench(result)}\n`);
