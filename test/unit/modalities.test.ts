/**
 * One home per modality: the registry, the video grid and patches (Qwen2.5-VL's temporal patch of two frames, merged
 * 2 x 2), the PPM reader of the decoder's output, and the grid carried by the position map into M-RoPE positions.
 */
import { describe, expect, it } from 'vitest';
import { MODALITIES } from '../../src/common/modality.ts';
import {
  modalities,
  modalitiesServed,
  modalityOfBody,
  placeholderSpellings,
} from '../../src/media/modalities/index.ts';
import { placeholderIds } from '../../src/engine/mediaPrompt.ts';
import { ByteTokenizer } from '../../src/tokenizer/ByteTokenizer.ts';
import { bytesKeyOf } from '../../src/media/mediaKey.ts';
import { video } from '../../src/media/modalities/video.ts';
import { buildPositionMap, mropePositions } from '../../src/media/positionMap.ts';
import { PpmFrames } from '../../src/media/video/PpmFrames.ts';
import {
  DEFAULT_VIDEO_GRID,
  effectiveFps,
  uniformPick,
  videoEmbeddingCount,
  videoGrid,
} from '../../src/media/video/videoGrid.ts';
import { videoPatches } from '../../src/media/video/videoPatches.ts';
import { encodersOf } from '../../src/common/graph.ts';
import type { EncoderSettings } from '../../src/common/encoderSettings.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { stagesFor } from '../../src/engine/planEdges.ts';

describe('the modality registry', () => {
  it('defines every modality once, with disjoint chunk formats and placeholders', () => {
    expect(Object.keys(modalities)).toEqual([...MODALITIES]);
    const formats = Object.values(modalities).flatMap((m) => m.formats);
    expect(new Set(formats).size).toBe(formats.length);
    const byteIds = placeholderIds(new ByteTokenizer(512));
    expect(MODALITIES.every((m) => byteIds[m] !== null)).toBe(true);
    expect(new Set(MODALITIES.map((m) => byteIds[m])).size).toBe(MODALITIES.length);
    expect(placeholderSpellings('audio').hf[0]).toBe('<|AUDIO|>'); // Qwen2.5-Omni's, tried first
    for (const m of MODALITIES) expect(modalities[m].name).toBe(m);
    const body = { kind: 'media', item: 0, what: 'x', bytes: new Uint8Array() } as const;
    expect(modalityOfBody({ ...body, format: 'pcm16' }).name).toBe('audio');
    expect(modalityOfBody({ ...body, format: 'video' }).name).toBe('video');
  });
});

describe('video grid', () => {
  it('counts ceil(frames / 2) temporal groups of (h / 28) x (w / 28) merged rows', () => {
    expect(videoGrid(8, 252, 168, DEFAULT_VIDEO_GRID)).toEqual({ t: 4, h: 6, w: 9 });
    expect(videoEmbeddingCount(7, 252, 168, DEFAULT_VIDEO_GRID)).toBe(4 * 54); // an odd last frame is padded
    expect(videoEmbeddingCount(1, 28, 28, DEFAULT_VIDEO_GRID)).toBe(1);
  });

  it('picks frames uniformly, first and last included, and says the rate they stand for', () => {
    expect(uniformPick(5, 8)).toEqual([0, 1, 2, 3, 4]);
    expect(uniformPick(10, 4)).toEqual([0, 3, 6, 9]);
    expect(uniformPick(10, 1)).toEqual([0]);
    expect(effectiveFps(10, 10, 2)).toBe(2);
    expect(effectiveFps(240, 32, 2)).toBeCloseTo(32 / 120); // 32 frames over a 120 s clip
  });

  it('cuts temporal patches of two frames in merge-group order, repeating an odd last frame', () => {
    const [w, h, n] = [56, 28, 3]; // 2 x 1 merged rows, 2 temporal groups
    const data = new Uint8Array(n * w * h * 3);
    for (let f = 0; f < n; f++) data.fill(10 * (f + 1), f * w * h * 3, (f + 1) * w * h * 3);
    const p = videoPatches({ data, numFrames: n, width: w, height: h }, DEFAULT_VIDEO_GRID);
    expect([p.gridT, p.gridHeight, p.gridWidth, p.numPatches, p.numEmbeddings]).toEqual([2, 2, 4, 16, 4]);
    const dim = 3 * 14 * 14; // image-shaped: a temporal patch is embedded as its frames' mean (tied weights)
    const at = (patch: number, c: number) => p.patches[patch * dim + c * 196];
    const value = (v: number, c: number) =>
      v / (255 * [0.26862954, 0.26130258, 0.27577711][c]) -
      [0.48145466, 0.4578275, 0.40821073][c] / [0.26862954, 0.26130258, 0.27577711][c];
    expect(p.patches.length).toBe(16 * dim);
    expect(at(0, 0)).toBeCloseTo(value(15, 0), 5); // group 0: frames 0 and 1 (10 and 20)
    expect(at(7, 2)).toBeCloseTo(value(15, 2), 5);
    expect(at(8, 1)).toBeCloseTo(value(30, 1), 5); // group 1: frame 2, twice
    // the first merge group is the 2 x 2 square at the top left: (0,0) (0,1) (1,0) (1,1)
    expect([...p.positions.subarray(0, 8)]).toEqual([0, 0, 0, 1, 1, 0, 1, 1]);
  });

  it('lays out a video part from its frames and keys its bytes without hashing them again', () => {
    const settings = { imageGrid: { patchSize: 14, mergeSize: 2 }, video: null } as unknown as EncoderSettings;
    const part = {
      type: 'video',
      data: new Uint8Array(0),
      numFrames: 5,
      width: 84,
      height: 56,
      fps: 2,
      sourceKey: 'a',
    };
    expect(video.layout(part as never, settings, 'v')).toEqual({
      numEmbeddings: 3 * 2 * 3,
      grid: { t: 3, h: 2, w: 3 },
    });
    expect(() => video.layout({ ...part, width: 80 } as never, settings, 'v')).toThrow(/not multiples of 28 px/);
    const body = video.body(part as never, 0, 'v');
    expect(bytesKeyOf(body)).toBe(bytesKeyOf({ ...body, bytes: new Uint8Array(9) }));
    expect(bytesKeyOf(body)).not.toBe(bytesKeyOf({ ...body, video: { ...body.video!, fps: 1 } }));
  });
});

describe('PpmFrames', () => {
  it('reassembles frames split anywhere across chunks', () => {
    const frame = (v: number) => Buffer.concat([Buffer.from('P6\n2 1\n255\n'), Buffer.alloc(6, v)]);
    const stream = Buffer.concat([frame(1), frame(2), frame(3)]);
    const reader = new PpmFrames();
    const got = [];
    for (let i = 0; i < stream.length; i += 5) got.push(...reader.push(stream.subarray(i, i + 5)));
    expect(got.map((f) => [f.width, f.height, f.data[0]])).toEqual([
      [2, 1, 1],
      [2, 1, 2],
      [2, 1, 3],
    ]);
    expect(reader.atBoundary).toBe(true);
    reader.push(frame(4).subarray(0, 14));
    expect(reader.atBoundary).toBe(false);
  });
});

describe('positions of a video', () => {
  it('carries the grid into its span and lays M-RoPE positions over time, rows and columns', () => {
    const grid = { t: 2, h: 1, w: 2 };
    const map = buildPositionMap([1, 9, 2], new Map([[9, 'video']]), [{ modality: 'video', numEmbeddings: 4, grid }]);
    expect(map.spans[0]).toMatchObject({ start: 1, length: 4, grid });
    const pos = mropePositions(map, new Map(), () => 3);
    const rows = Array.from({ length: map.length }, (_, i) => [...pos.subarray(3 * i, 3 * i + 3)]);
    expect(rows).toEqual([
      [0, 0, 0], // text
      [1, 1, 1], // t 0, row 0, col 0
      [1, 1, 2],
      [4, 1, 1], // t 1: 3 time steps later
      [4, 1, 2],
      [5, 5, 5], // text resumes after the largest position used
    ]);
    expect(() =>
      buildPositionMap([9], new Map([[9, 'video']]), [{ modality: 'video', numEmbeddings: 3, grid }]),
    ).toThrow(/grid is not its 3 embeddings/);
  });
});

describe('an image encoder serving video', () => {
  const yaml = (audioVideo = '') => `
model_preset: tiny
connectors: { shm: { kind: shm } }
stages:
  - stage_id: audio-encoder
    kind: encoder
    model: {}
    encoder: { modality: audio${audioVideo} }
  - stage_id: image-encoder
    kind: encoder
    model: {}
    encoder: { modality: image, video: { fps: 1, max_frames: 8 } }
  - stage_id: thinker
    kind: thinker
    model: {}
    inputs: [{ from: audio-encoder, connector: shm }, { from: image-encoder, connector: shm }]
    final_output: true
    final_output_type: text
`;

  it('takes video with its settings over the defaults, and runs for a video item', () => {
    const graph = parseConfig(yaml(), '/tmp/video.yaml');
    const image = graph.stages.find((s) => s.stageId === 'image-encoder')!;
    expect(image.encoder!.video).toMatchObject({ fps: 1, maxFrames: 8, framePixels: 224 * 224, maxSeconds: 600 });
    expect(modalitiesServed(image.encoder!)).toEqual(['image', 'video']);
    expect(encodersOf(graph).get('video')?.stageId).toBe('image-encoder');
    expect(stagesFor(graph, ['text'], ['video']).map((s) => s.stageId)).toEqual(['image-encoder', 'thinker']);
  });

  it('refuses video settings on an audio encoder, naming the path', () => {
    expect(() => parseConfig(yaml(', video: { fps: 2 }'), '/tmp/video.yaml')).toThrow(
      /stages\[0\]\.encoder\.video.*only a vision encoder/s,
    );
  });
});
