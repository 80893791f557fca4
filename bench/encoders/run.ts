/**
 * `node --import tsx bench/encoders/run.ts [--preset tiny|omni] [--threads N] [--images N] [--image-size PX] [--repeats
 * N] [--json]`
 * — builds the preset's encoders in a temp folder and prints the encoder figures (or JSON).
 */
import { parseArgs } from 'node:util';
import { formatEncoderBench, runEncoderBench } from './runEncoderBench.ts';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    threads: { type: 'string' },
    images: { type: 'string' },
    'image-size': { type: 'string' },
    repeats: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
const result = await runEncoderBench({
  preset: values.preset,
  threads: num(values.threads),
  images: num(values.images),
  imageSize: num(values['image-size']),
  repeats: num(values.repeats),
});
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatEncoderBench(result)}\n`);
