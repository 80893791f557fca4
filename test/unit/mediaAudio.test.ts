/** WAV / pcm16 decoding (headers written by hand here), downmix, limits and the errors bad audio gets. */
import { describe, expect, it } from 'vitest';
import { audioEmbeddingCount, decodeAudio } from '../../src/media/audio.ts';
import { prepareAudio, prepareAudioBase64 } from '../../src/media/prepareMedia.ts';
import { decodePcm16, decodeWav } from '../../src/media/wav.ts';
import { ErrorCodes } from '../../src/common/errors.ts';

interface WavSpec {
  readonly format?: number; // 1 PCM, 3 float, 0xfffe extensible
  readonly subFormat?: number;
  readonly channels: number;
  readonly rate: number;
  readonly bits: number;
  /** Interleaved frames, each value already in the sample's integer/float domain. */
  readonly frames: readonly number[][];
  readonly declaredDataSize?: number;
  readonly extraChunk?: boolean; // a LIST chunk of odd size before data (tests padding)
}

/** A WAV file written field by field (RIFF header, fmt, optional LIST, data). */
function wav(spec: WavSpec): Uint8Array {
  const width = spec.bits / 8;
  const dataSize = spec.frames.length * spec.channels * width;
  const extensible = spec.format === 0xfffe;
  const fmtSize = extensible ? 40 : 16;
  const listSize = spec.extraChunk ? 5 : 0;
  const total = 12 + 8 + fmtSize + (spec.extraChunk ? 8 + listSize + 1 : 0) + 8 + dataSize;
  const buf = new DataView(new ArrayBuffer(total));
  let at = 0;
  const str = (s: string) => {
    for (const ch of s) buf.setUint8(at++, ch.charCodeAt(0));
  };
  str('RIFF');
  buf.setUint32(at, total - 8, true);
  at += 4;
  str('WAVE');
  str('fmt ');
  buf.setUint32(at, fmtSize, true);
  buf.setUint16(at + 4, spec.format ?? 1, true);
  buf.setUint16(at + 6, spec.channels, true);
  buf.setUint32(at + 8, spec.rate, true);
  buf.setUint32(at + 12, spec.rate * spec.channels * width, true);
  buf.setUint16(at + 16, spec.channels * width, true);
  buf.setUint16(at + 18, spec.bits, true);
  if (extensible) {
    buf.setUint16(at + 20, 22, true);
    buf.setUint16(at + 22, spec.bits, true);
    buf.setUint16(at + 28, spec.subFormat ?? 1, true); // SubFormat GUID's first two bytes (body offset 24)
  }
  at += 4 + fmtSize;
  if (spec.extraChunk) {
    str('LIST');
    buf.setUint32(at, listSize, true);
    at += 4 + listSize + 1;
  }
  str('data');
  buf.setUint32(at, spec.declaredDataSize ?? dataSize, true);
  at += 4;
  for (const frame of spec.frames) {
    for (const v of frame) {
      if ((spec.format ?? 1) === 3 || spec.subFormat === 3) buf.setFloat32(at, v, true);
      else if (spec.bits === 16) buf.setInt16(at, v, true);
      else if (spec.bits === 24) {
        buf.setUint8(at, v & 0xff);
        buf.setUint8(at + 1, (v >> 8) & 0xff);
        buf.setInt8(at + 2, v >> 16);
      } else if (spec.bits === 8) buf.setUint8(at, v);
      at += width;
    }
  }
  return new Uint8Array(buf.buffer);
}

function expectMediaError(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect((err as { code?: string }).code).toBe(ErrorCodes.MEDIA_INVALID);
    expect((err as Error).message).toMatch(pattern);
    return;
  }
  throw new Error('expected a media error');
}

describe('decodeWav', () => {
  it('decodes 16-bit stereo, averaging the channels, across an odd-sized extra chunk', () => {
    const out = decodeWav(
      wav({
        channels: 2,
        rate: 44100,
        bits: 16,
        frames: [
          [16384, -16384],
          [32767, 32767],
          [-32768, 0],
        ],
        extraChunk: true,
      }),
    );
    expect(out.sampleRateHz).toBe(44100);
    expect(out.numChannels).toBe(2);
    expect(Array.from(out.samples)).toEqual([0, 32767 / 32768, -0.5]);
  });

  it('decodes 32-bit float, 24-bit and 8-bit PCM, and WAVE_FORMAT_EXTENSIBLE', () => {
    expect(
      Array.from(decodeWav(wav({ format: 3, channels: 1, rate: 16000, bits: 32, frames: [[0.25], [-1]] })).samples),
    ).toEqual([0.25, -1]);
    expect(
      Array.from(decodeWav(wav({ channels: 1, rate: 8000, bits: 24, frames: [[4194304], [-8388608]] })).samples),
    ).toEqual([0.5, -1]);
    expect(Array.from(decodeWav(wav({ channels: 1, rate: 8000, bits: 8, frames: [[192], [128]] })).samples)).toEqual([
      0.5, 0,
    ]);
    const ext = decodeWav(wav({ format: 0xfffe, subFormat: 3, channels: 1, rate: 48000, bits: 32, frames: [[0.5]] }));
    expect(Array.from(ext.samples)).toEqual([0.5]);
  });

  it('reads a streaming WAV (data size 0xFFFFFFFF) up to the last whole frame', () => {
    const bytes = wav({
      channels: 2,
      rate: 16000,
      bits: 16,
      frames: [
        [100, 100],
        [200, 200],
      ],
      declaredDataSize: 0xffffffff,
    });
    const truncated = bytes.subarray(0, bytes.length - 1); // half a sample of the last frame is gone
    expect(decodeWav(truncated).samples.length).toBe(1);
  });

  it('names what is wrong with bad WAV files', () => {
    expectMediaError(
      () => decodeWav(new TextEncoder().encode('hello world, not audio'), 'messages[0].content[1]'),
      /messages\[0\]\.content\[1\]: not a WAV/,
    );
    expectMediaError(
      () => decodeWav(wav({ format: 2, channels: 1, rate: 16000, bits: 16, frames: [[0]] })),
      /sample format 2/,
    );
    expectMediaError(() => decodeWav(wav({ channels: 1, rate: 16000, bits: 12, frames: [] })), /12-bit/);
    expectMediaError(() => decodeWav(wav({ channels: 1, rate: 100, bits: 16, frames: [[0]] })), /sample rate 100/);
    const noData = wav({ channels: 1, rate: 16000, bits: 16, frames: [] }).subarray(0, 36);
    expectMediaError(() => decodeWav(noData), /no data chunk/);
  });
});

describe('decodePcm16 and decodeAudio', () => {
  it('decodes little-endian pcm16 at 24 kHz by default and resamples to 16 kHz', () => {
    const pcm = new Int16Array(2400).fill(8192); // 100 ms of DC at 0.25
    const bytes = new Uint8Array(pcm.buffer);
    expect(decodePcm16(bytes).sampleRateHz).toBe(24000);
    const samples = decodeAudio(bytes, 'pcm16');
    expect(samples.length).toBe(1600);
    // DC passes at unit gain away from the edges (the filter sees silence beyond them).
    expect(samples[800]).toBeCloseTo(0.25, 5);
  });

  it('refuses odd pcm16, too-short and too-long audio, unknown formats, non-finite samples', () => {
    expectMediaError(() => decodeAudio(new Uint8Array(3), 'pcm16'), /odd number of bytes/);
    expectMediaError(() => decodeAudio(new Uint8Array(100), 'pcm16'), /at least 10 ms/);
    expectMediaError(() => decodeAudio(new Uint8Array(48000 * 2 * 3), 'pcm16', { maxSeconds: 2 }), /limit is 2 s/);
    expectMediaError(() => decodeAudio(new Uint8Array(4), 'mp3' as 'wav'), /"mp3" is not supported/);
    expectMediaError(
      () => decodeAudio(wav({ format: 3, channels: 1, rate: 16000, bits: 32, frames: [[0], [Number.NaN]] }), 'wav'),
      /sample 1 is not a finite/,
    );
  });

  it('counts 25 embeddings per second of 16 kHz audio', () => {
    expect(audioEmbeddingCount(16000)).toBe(25);
    expect(audioEmbeddingCount(30 * 16000)).toBe(750);
    expect(audioEmbeddingCount(160)).toBe(1); // one frame still gives a row
    expect(audioEmbeddingCount(16000 + 160)).toBe(26); // 101 frames -> ceil(101 / 4)
    expect(audioEmbeddingCount(159)).toBe(0);
  });

  it('prepares audio: the same sound as WAV or as base64 pcm16 has the same cache key', () => {
    const values = Array.from({ length: 24000 }, (_, i) => Math.round(8000 * Math.sin(i / 7)));
    const asWav = prepareAudio(wav({ channels: 1, rate: 24000, bits: 16, frames: values.map((v) => [v]) }), 'wav');
    const asPcm = prepareAudioBase64(Buffer.from(Int16Array.from(values).buffer).toString('base64'), 'pcm16');
    expect(asWav.numEmbeddings).toBe(25);
    expect(asPcm.cacheKey('enc')).toBe(asWav.cacheKey('enc'));
    const features = asPcm.features();
    expect([features.numMelBins, features.numFrames, features.numEmbeddings]).toEqual([80, 100, 25]);
    expect(asPcm.features()).toBe(features); // computed once
    expectMediaError(
      () => prepareAudioBase64('@@@', 'pcm16', { what: 'input_audio_buffer' }),
      /input_audio_buffer: data is not valid base64/,
    );
  });
});
