import { describe, expect, it } from 'vitest';
import { decodeFrame, encodeFrame, joinParts } from '../../transport/codec.ts';
import { isChorusError } from '../../src/common/errors.ts';

describe('frame codec', () => {
  it('round-trips metadata and tensors of every dtype, tensors as aligned views without copying', () => {
    const rows = Float32Array.from({ length: 3 * 5 }, (_, i) => i / 7);
    const codes = Int32Array.from({ length: 16 * 4 }, (_, i) => i * 3);
    const ids = BigInt64Array.from([1n, -2n, 3n]);
    const pcm = Int16Array.from([-32768, 0, 32767]);
    const meta = { requestId: 'r_1', seq: 7, final: true, text: 'héllo 🎵' };
    const frame = joinParts(
      encodeFrame(meta, {
        rows: { data: rows, shape: [3, 5] },
        codes: { data: codes, shape: [16, 4] },
        ids: { data: ids, shape: [3] },
        pcm: { data: pcm, shape: [3] },
      }),
    );
    const decoded = decodeFrame<typeof meta>(frame);
    expect(decoded.meta).toEqual(meta);
    expect(Array.from(decoded.tensors.rows.data as Float32Array)).toEqual(Array.from(rows));
    expect(decoded.tensors.rows.shape).toEqual([3, 5]);
    expect(Array.from(decoded.tensors.codes.data as Int32Array)).toEqual(Array.from(codes));
    expect(Array.from(decoded.tensors.ids.data as BigInt64Array)).toEqual([1n, -2n, 3n]);
    expect(Array.from(decoded.tensors.pcm.data as Int16Array)).toEqual([-32768, 0, 32767]);
    expect(decoded.tensors.rows.data.buffer).toBe(frame.buffer); // a view, not a copy
  });

  it('decodes a frame that starts at an unaligned offset (by copying once)', () => {
    const parts = encodeFrame({ a: 1 }, { x: { data: Float32Array.of(1.5, -2.5), shape: [2] } });
    const joined = joinParts(parts);
    const shifted = new Uint8Array(joined.length + 3);
    shifted.set(joined, 3);
    const decoded = decodeFrame<{ a: number }>(shifted.subarray(3));
    expect(Array.from(decoded.tensors.x.data as Float32Array)).toEqual([1.5, -2.5]);
  });

  it('rejects garbage and truncated frames with CHORUS_ERR_FRAME_INVALID', () => {
    const good = joinParts(encodeFrame({ a: 1 }, { x: { data: new Float32Array(64), shape: [64] } }));
    for (const bad of [new Uint8Array(3), new Uint8Array(64), good.subarray(0, good.length - 8)]) {
      let caught: unknown;
      try {
        decodeFrame(bad);
      } catch (err) {
        caught = err;
      }
      expect(isChorusError(caught, 'CHORUS_ERR_FRAME_INVALID')).toBe(true);
    }
  });
});
