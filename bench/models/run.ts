/**
 * `node --import tsx bench/models/run.ts [--preset tiny|omni] [--threads N] [--batch N] [--tokens N]
 * [--stateless-vocoder] [--json]` — builds the preset's models in a temp folder and prints the model-layer figures
 * (or JSON); --stateless-vocoder times the Code2Wav without state (left context decoded again with every chunk).
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
    'stateless-vocoder': { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
const result = await runModelBench({
  preset: values.preset,
  threads: num(values.threads),
  batch: num(values.batch),
  answerTokens: num(values.tokens),
  ...(values['stateless-vocoder'] ? { code2wavStreamingState: false } : {}),
});
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatModelBench(result)}\n`);
