/**
 * Chorus's dequantization of every ggml type it converts against the `gguf` Python package's (dequantize.py: random
 * blocks with finite scales), and the clear error for a type it does not convert.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import { CONVERTED_TYPES, dequantize, ggmlType } from '../../../stages/thinker/gguf/ggmlTypes.ts';
import { runPython, scratchDir } from './smollm2.ts';

const TYPES = CONVERTED_TYPES.filter((t) => t !== 'F32'); // F32 is a byte copy
const IDS: Record<string, number> = {
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  BF16: 30,
};
const scratch = scratchDir();
let counts: Record<string, number>;

beforeAll(async () => {
  ({ counts } = await runPython<{ counts: Record<string, number> }>('dequantize.py', {
    types: TYPES,
    blocks: 64,
    dir: scratch.dir,
    seed: 43,
  }));
});

afterAll(() => scratch.cleanup());

describe('ggml dequantization', () => {
  it.each(TYPES)('%s equals the gguf package to float32 rounding', (name) => {
    const type = ggmlType(IDS[name], 'test', 'test');
    expect(type.name).toBe(name);
    const raw = new Uint8Array(readFileSync(join(scratch.dir, `${name}.bin`)));
    const want = scratch.read(`${name}.f32`);
    const got = dequantize(type, raw, counts[name], name);
    expect(got.length).toBe(want.length);
    let scale = 0;
    for (const v of want) scale = Math.max(scale, Math.abs(v));
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
    expect(scale).toBeGreaterThan(0);
    expect(worst / scale).toBeLessThan(1e-6); // the same products, rounded in another order at most
  });

  it('names a type it does not convert, and what it does', () => {
    const iq2 = ggmlType(16, 'blk.0.ffn_up.weight', 'model.gguf');
    let error: unknown;
    try {
      dequantize(iq2, new Uint8Array(66), 256, 'blk.0.ffn_up.weight');
    } catch (err) {
      error = err;
    }
    expect(isChorusError(error, ErrorCodes.GGUF_UNSUPPORTED)).toBe(true);
    expect((error as Error).message).toMatch(/blk\.0\.ffn_up\.weight is quantized as IQ2_XXS.*Q4_1.*Q6_K/);
    expect(() => ggmlType(99, 't', 'model.gguf')).toThrow(/ggml type 99/);
  });
});
