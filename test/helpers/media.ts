/** The seeded media the benches make (bench/mediaSamples.ts: the bench imports nothing from test/), and a JPEG. */
import jpeg from 'jpeg-js';
import { pattern } from '../../bench/mediaSamples.ts';

export * from '../../bench/mediaSamples.ts';

export function jpegBytes(width: number, height: number, seed = 1, quality = 90): Uint8Array {
  return new Uint8Array(jpeg.encode({ data: pattern(width, height, seed), width, height }, quality).data);
}
