/**
 * A clip heard with its audio track (use_audio_in_video): Qwen2.5-Omni's TMRoPE layout (per chunk of N seconds, the
 * frames' rows then the sound's, on one 25-steps-per-second time axis driven by the clip's effective rate), carried
 * by the position map (one placeholder, the clip's and the track's spans interleaved, each with its row offset), by
 * the Thinker's splice and drop, and by the M-RoPE positions; the decoder takes the track from the same child.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { AUDIO_ROWS_PER_SECOND } from '../../src/media/audio.ts';
import { buildPositionMap, mropePositions, spliceRange, type MediaItemLayout } from '../../src/media/positionMap.ts';
import { decodeVideo } from '../../src/media/video/decodeVideo.ts';
import { groupTime, interleaveLayout, interleavedPositions } from '../../src/media/video/interleave.ts';
import { DEFAULT_VIDEO_GRID } from '../../src/media/video/videoGrid.ts';
import { ThinkerMedia } from '../../stages/thinker/ThinkerMedia.ts';
import { makeVideo } from '../helpers/videos.ts';

const timing = { rowsPerSecond: 25, secondsPerChunk: 2 };

describe('interleaveLayout', () => {
  it('puts each 2 s chunk of frames before that chunk of sound, from the effective rate', () => {
    // 6 s at fps 2: 6 temporal groups one second apart (2 frames each), 2 x 2 rows each; 150 audio rows (6 s at 25/s)
    const grid = { t: 6, h: 2, w: 2 };
    expect(interleaveLayout(grid, 1, 150, timing)).toEqual([
      { source: 'video', offset: 0, length: 8 }, // groups 0, 1 (t = 0, 25 steps)
      { source: 'audio', offset: 0, length: 50 }, // steps 0..49
      { source: 'video', offset: 8, length: 8 }, // groups 2, 3 (50, 75)
      { source: 'audio', offset: 50, length: 50 },
      { source: 'video', offset: 16, length: 8 },
      { source: 'audio', offset: 100, length: 50 },
    ]);
    // max_frames bound: the same 6 groups standing for 12 s (one every 2 s) spread over twice the chunks
    const slow = interleaveLayout(grid, 2, 300, timing);
    expect(slow.filter((s) => s.source === 'video').map((s) => s.offset)).toEqual([0, 4, 8, 12, 16, 20]);
    expect(slow.map((s) => s.source).join(' ')).toBe(
      'video audio video audio video audio video audio video audio video audio',
    );
  });

  it('gives a chunk without a frame its sound alone, and the longer stream the last chunks', () => {
    const grid = { t: 2, h: 1, w: 3 };
    // groups 4 s apart (fps 0.5): chunk 1 (2..4 s) has no frame; the track runs on to 7 s, the clip stops at 4 s
    const layout = interleaveLayout(grid, 4, 175, timing);
    expect(layout.map((s) => `${s.source} ${s.offset}+${s.length}`)).toEqual([
      'video 0+3',
      'audio 0+50',
      'audio 50+50',
      'video 3+3',
      'audio 100+50',
      'audio 150+25',
    ]);
    // a short track: the clip's later chunks come alone
    expect(interleaveLayout({ t: 4, h: 1, w: 1 }, 1, 10, timing).map((s) => s.source)).toEqual([
      'video',
      'audio',
      'video',
    ]);
  });

  it('covers each stream exactly once, in its own order, for any rate and chunk', () => {
    for (const [t, spg, audio, chunk] of [
      [16, 0.8, 333, 2],
      [3, 0.1, 7, 1],
      [9, 3.5, 1000, 0.5],
    ] as const) {
      const grid = { t, h: 2, w: 3 };
      const layout = interleaveLayout(grid, spg, audio, { rowsPerSecond: 25, secondsPerChunk: chunk });
      for (const [source, total] of [
        ['video', t * 6],
        ['audio', audio],
      ] as const) {
        const runs = layout.filter((s) => s.source === source);
        let next = 0;
        for (const r of runs) {
          expect(r.offset).toBe(next);
          next += r.length;
        }
        expect(next).toBe(total);
      }
    }
    expect(groupTime(3, 0.1, 25)).toBe(7); // 7.5 truncated, as Qwen2.5-Omni's .long()
    expect(AUDIO_ROWS_PER_SECOND).toBe(25);
  });

  it('lays TMRoPE positions: frames at their group time, sound at its row, on one time axis', () => {
    const grid = { t: 2, h: 1, w: 2 };
    const segments = interleaveLayout(grid, 2, 60, timing); // groups at 0 and 50 steps
    const { positions, next } = interleavedPositions(segments, grid, 2, 10, 25);
    const rows = Array.from({ length: positions.length / 3 }, (_, i) => [...positions.subarray(3 * i, 3 * i + 3)]);
    expect(rows.slice(0, 3)).toEqual([
      [10, 10, 10], // group 0, column 0
      [10, 10, 11],
      [10, 10, 10], // audio row 0
    ]);
    expect(rows[52]).toEqual([60, 10, 10]); // group 1 (2 s = 50 steps), after audio rows 0..49
    expect(rows.at(-1)).toEqual([69, 69, 69]); // audio row 59
    expect(next).toBe(70);
  });
});

describe('the position map of a clip with its track', () => {
  const grid = { t: 2, h: 1, w: 2 };
  const items: MediaItemLayout[] = [
    { modality: 'video', numEmbeddings: 4, grid, audioTrack: { secondsPerGroup: 2, timing } },
    { modality: 'audio', numEmbeddings: 60, trackOf: 0 },
    { modality: 'image', numEmbeddings: 2 },
  ];
  const map = buildPositionMap(
    [1, 9, 2, 8, 3],
    new Map([
      [9, 'video'],
      [8, 'image'],
    ] as const),
    items,
  );

  it('expands the one placeholder to both streams interleaved, spans carrying their row offsets', () => {
    expect(map.length).toBe(3 + 64 + 2);
    expect(map.spans.map((s) => [s.item, s.modality, s.start, s.length, s.offset ?? 0])).toEqual([
      [0, 'video', 1, 2, 0],
      [1, 'audio', 3, 50, 0],
      [0, 'video', 53, 2, 2],
      [1, 'audio', 55, 10, 50],
      [2, 'image', 66, 2, 0],
    ]);
    expect(new Set(map.spans.slice(0, 4).map((s) => s.placeholderIndex))).toEqual(new Set([1]));
    expect(() => buildPositionMap([9], new Map([[9, 'video']]), items.slice(0, 1))).toThrow(/not that track/);
    expect(() => buildPositionMap([9, 9], new Map([[9, 'video']]), [items[0], items[0]])).toThrow(/not that track/);
  });

  it('splices each row from its item at its offset, and M-RoPE positions follow TMRoPE', () => {
    const d = 1;
    const video = Float32Array.from([100, 101, 102, 103]);
    const audio = Float32Array.from({ length: 60 }, (_, k) => 200 + k);
    const image = Float32Array.from([300, 301]);
    const out = spliceRange(map, 0, map.length, new Float32Array(map.length), [video, audio, image], d);
    expect([...out.subarray(0, 5)]).toEqual([0, 100, 101, 200, 201]);
    expect([...out.subarray(52, 56)]).toEqual([249, 102, 103, 250]);
    expect([...out.subarray(64, 68)]).toEqual([259, 0, 300, 301]);
    const pos = mropePositions(map, new Map([[2, { t: 1, h: 1, w: 2 }]]), () => 50);
    expect([...pos.subarray(3 * 53, 3 * 54)]).toEqual([51, 1, 1]); // clip group 1: 50 steps after the start (1)
    expect([...pos.subarray(3 * 64, 3 * 65)]).toEqual([60, 60, 60]); // the track's last row
    expect([...pos.subarray(3 * 65, 3 * 66)]).toEqual([61, 61, 61]); // text resumes past it
  });

  it("lets the Thinker prefill the clip's first chunk before the track, and drop a lost track alone", () => {
    const prompt = [...map.tokenIds];
    const from = { instance: 'e#0', stageId: 'e' };
    const plan = {
      spans: map.spans,
      items: items.map((it, i) => ({
        modality: it.modality,
        numEmbeddings: it.numEmbeddings,
        what: `item ${i}`,
        from,
        onFailure: 'text_only' as const,
      })),
    };
    const media = new ThinkerMedia(plan, prompt, 1);
    expect(media.setRows(0, 'e', { rows: new Float32Array(4), numRows: 4, width: 1 })).toBeNull();
    expect(media.readyLimit(0)).toBe(3); // the track's first chunk is next
    expect(media.rowAt(53)).toEqual(new Float32Array(1)); // clip row 2
    expect(media.drop(1, 'its encoder failed')).toBe(map.length - 60);
    expect(media.readyLimit(0)).toBe(6); // the image, now at 6
    expect(media.rowAt(3)).toEqual(new Float32Array(1)); // the clip's group 1, moved up beside group 0
    expect(media.rowAt(4)).toEqual(new Float32Array(1));
    expect(media.warnings[0]).toMatch(/item 1 was left out/);
  });

  it("takes a clip's rows in pieces, in order: each span readies up to its first row missing", () => {
    const from = { instance: 'e#0', stageId: 'e' };
    const plan = {
      spans: map.spans,
      items: items.map((it, i) => ({ ...it, what: `item ${i}`, from, onFailure: 'fail' as const })),
    };
    const media = new ThinkerMedia(plan, [...map.tokenIds], 1);
    const piece = (offset: number, numRows: number) =>
      media.setRows(0, 'e', { rows: new Float32Array(numRows).fill(offset + 1), numRows, width: 1, offset });
    expect(piece(0, 1)).toBeNull();
    expect(media.readyLimit(0)).toBe(2); // the first of the first chunk's two rows
    expect(media.rowAt(2)).toBeNull();
    expect(piece(2, 1)).toMatch(/from its row 2, expected the next of \[4, 1\] float32 from row 1/); // out of order
    expect(piece(1, 2)).toBeNull();
    expect(media.readyLimit(0)).toBe(3); // the clip's first chunk is in; the track's is next
    expect(media.rowsOf(0)).toBeNull(); // not whole yet
    expect(piece(3, 1)).toBeNull();
    expect(media.rowsOf(0)).toEqual(Float32Array.from([1, 2, 2, 4]));
  });
});

describe('decoding the track', () => {
  const limits = { maxSeconds: 60, maxInputBytes: 8e6, maxFrameBytes: 64e6, timeoutMs: 10_000 };

  it("takes a clip's audio as 16 kHz mono pcm16 from the same child, and refuses a silent clip by name", async () => {
    const [withSound, silent] = await Promise.all([makeVideo({ seconds: 2, audio: true }), makeVideo({ seconds: 2 })]);
    const sampling = { fps: 2, maxFrames: 32, withAudio: true };
    const v = await decodeVideo({ kind: 'file', bytes: withSound }, sampling, DEFAULT_VIDEO_GRID, limits, 'clip');
    expect(v.numFrames).toBe(4);
    // 2 s at 16 kHz, 2 bytes a sample (the AAC encoder's priming may add a frame of 1024 samples at 48 kHz)
    expect(v.audio!.byteLength).toBeGreaterThanOrEqual(2 * 16_000 * 2 * 0.98);
    expect(v.audio!.byteLength).toBeLessThanOrEqual(2 * 16_000 * 2 * 1.05);
    const samples = new Int16Array(v.audio!.buffer, v.audio!.byteOffset, v.audio!.byteLength / 2);
    expect(Math.max(...samples.subarray(8000, 9000))).toBeGreaterThan(1000); // the 440 Hz tone, not silence
    const err = await decodeVideo({ kind: 'file', bytes: silent }, sampling, DEFAULT_VIDEO_GRID, limits, 'item 2').then(
      () => null,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(err?.code).toBe(ErrorCodes.VIDEO_NO_AUDIO);
    expect(err?.message).toMatch(/^item 2: mm_processor_kwargs.use_audio_in_video .* no audio stream/);
    const plain = await decodeVideo(
      { kind: 'file', bytes: withSound },
      { fps: 2, maxFrames: 32 },
      DEFAULT_VIDEO_GRID,
      limits,
      'c',
    );
    expect(plain.audio).toBeUndefined();
  });
});
