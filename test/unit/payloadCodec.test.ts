/** Chunk bodies through the frame codec and back: every kind round-trips; a malformed one names its fault. */
import { describe, expect, it } from 'vitest';
import type { ChunkBody } from '../../src/common/payloads.ts';
import { decodeFrame, encodeFrame, joinParts, type Tensor } from '../../transport/codec.ts';
import { decodeBody, encodeBody } from '../../transport/payloadCodec.ts';

const bodies: ChunkBody[] = [
  {
    kind: 'media',
    item: 2,
    format: 'pcm16',
    sampleRateHz: 16_000,
    what: 'messages[0].content[1] (audio)',
    bytes: Uint8Array.of(1, 2, 3),
  },
  { kind: 'media', item: 0, format: 'image', what: 'an image', bytes: Uint8Array.of(9) },
  { kind: 'encoderRows', item: 1, rows: Float32Array.of(1, 2, 3, 4, 5, 6), numRows: 2, width: 3 },
  { kind: 'encoderRows', item: 1, error: { code: 'CHORUS_ERR_MEDIA_INVALID', message: 'not a WAV file' } },
  { kind: 'talkerRows', rows: Float32Array.of(0.5, -0.5), numRows: 1, conditionDim: 2, promptRows: 7 },
  { kind: 'talkerRows', rows: Float32Array.of(0.25, 0.75), numRows: 1, conditionDim: 2 },
  {
    kind: 'talkerRows',
    rows: Float32Array.of(0.25, 0.75),
    numRows: 1,
    conditionDim: 2,
    promptRows: 1,
    promptBlocks: { names: ['a', 'b'], positions: 16 },
  },
  { kind: 'codecFrames', codes: Int32Array.of(1, 2, 3, 4, 5, 6), numCodebooks: 2, numFrames: 3, contextFrames: 1 },
  { kind: 'text', tokenIds: [300, 301], warnings: ['an item was left out'], droppedItems: [0, 2] },
  { kind: 'text', tokenIds: [] },
  { kind: 'audio', pcm: Float32Array.of(0.1, -0.2), sampleRateHz: 24_000 },
];

function roundTrip(body: ChunkBody): ChunkBody {
  const { payload, tensors } = encodeBody(body);
  const frame = decodeFrame<{ p: unknown }>(joinParts(encodeFrame({ p: payload }, tensors)));
  return decodeBody(frame.meta.p, frame.tensors);
}

describe('chunk bodies', () => {
  it.each(bodies.map((b) => [b.kind, b] as const))('%s round-trips through a frame', (_, body) => {
    expect(roundTrip(body)).toEqual(body);
  });

  const rows = (data: Tensor['data'], shape: number[]): Record<string, Tensor> => ({ rows: { data, shape } });
  it.each([
    ['a missing tensor', { kind: 'talkerRows' }, {}, /lacks tensor "rows"/],
    ['a wrong dtype', { kind: 'talkerRows' }, rows(Int32Array.of(1, 2), [1, 2]), /"rows" is not a Float32Array/],
    ['a wrong rank', { kind: 'talkerRows' }, rows(Float32Array.of(1, 2), [2]), /"rows" has shape \[2\], want rank 2/],
    [
      'a non-integer scalar',
      { kind: 'audio', sampleRateHz: 'fast' },
      { pcm: { data: Float32Array.of(0), shape: [1] } },
      /payload.sampleRateHz is not an integer/,
    ],
    [
      'codes of a wrong dtype',
      { kind: 'codecFrames', contextFrames: 0 },
      { codes: { data: Float32Array.of(1, 2), shape: [1, 2] } },
      /"codes" is not a Int32Array/,
    ],
    [
      'a non-integer contextFrames',
      { kind: 'codecFrames', contextFrames: 0.5 },
      { codes: { data: Int32Array.of(1, 2), shape: [1, 2] } },
      /payload.contextFrames is not an integer/,
    ],
    ['a media format outside its set', { kind: 'media', item: 0, format: 'mp3', what: 'x' }, {}, /payload.format/],
    ['token ids that are not integers', { kind: 'text', tokenIds: [1, 'two'] }, {}, /payload.tokenIds/],
    ['an unknown kind', { kind: 'video' }, {}, /unknown chunk body kind "video"/],
    ['a payload that is not an object', 42, {}, /not an object/],
  ] as const)('refuses %s with FRAME_INVALID', (_, payload, tensors, message) => {
    expect(() => decodeBody(payload, tensors)).toThrow(expect.objectContaining({ code: 'CHORUS_ERR_FRAME_INVALID' }));
    expect(() => decodeBody(payload, tensors)).toThrow(message);
  });
});
