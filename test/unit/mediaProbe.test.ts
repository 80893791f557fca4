/** The header-only probes main runs agree with the full preprocessing the encoder stage runs. */
import { describe, expect, it } from 'vitest';
import { prepareAudio, prepareImage } from '../../src/media/prepareMedia.ts';
import { probeAudio, probeImage } from '../../src/media/probeMedia.ts';
import { DEFAULT_IMAGE_GRID } from '../../src/media/imagePatches.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { jpegBytes, pcm16Bytes, pngBytes, wavBytes } from '../helpers/media.ts';

function mediaError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect((err as { code?: string }).code).toBe(ErrorCodes.MEDIA_INVALID);
    return (err as Error).message;
  }
  throw new Error('expected a media error');
}

describe('probeAudio', () => {
  it.each([
    ['30 s wav at 24 kHz', wavBytes(30, 24000), 'wav', undefined],
    ['1.37 s wav at 44.1 kHz', wavBytes(1.37, 44100), 'wav', undefined],
    ['0.5 s wav at 16 kHz', wavBytes(0.5, 16000), 'wav', undefined],
    ['2.01 s pcm16 at 24 kHz', pcm16Bytes(2.01, 24000), 'pcm16', 24000],
    ['0.3 s pcm16 at 8 kHz', pcm16Bytes(0.3, 8000), 'pcm16', 8000],
  ] as const)('%s: the same embedding count as decoding', (_name, bytes, format, rate) => {
    const probe = probeAudio(bytes, format, { pcm16RateHz: rate });
    expect(probe.numEmbeddings).toBe(prepareAudio(bytes, format, { pcm16RateHz: rate }).numEmbeddings);
  });

  it(
    'counts a WAV whose data chunk claims more than the file holds up to its last whole frame, as decoding ' + 'does',
    () => {
      const truncated = wavBytes(2, 24000, 1, 10_000_000);
      expect(probeAudio(truncated, 'wav').numEmbeddings).toBe(prepareAudio(truncated, 'wav').numEmbeddings);
    },
  );

  it("refuses what the header shows is unusable, with the decoder's messages", () => {
    const what = { what: 'messages[0].content[1] (audio)' };
    for (const [bytes, format, opts] of [
      [new Uint8Array([1, 2, 3, 4]), 'wav', what],
      [pcm16Bytes(0.001, 24000), 'pcm16', what],
      [new Uint8Array(3), 'pcm16', what],
      [wavBytes(3), 'wav', { ...what, maxSeconds: 2 }],
    ] as const) {
      const probed = mediaError(() => probeAudio(bytes, format, opts));
      expect(probed).toMatch(/^messages\[0\]\.content\[1\] \(audio\): /);
      expect(probed).toBe(mediaError(() => prepareAudio(bytes, format, opts)));
    }
    expect(mediaError(() => probeAudio(pcm16Bytes(1), 'pcm16', { pcm16RateHz: 22.5 }))).toMatch(
      /sample rate 22.5 Hz is out of range/,
    );
  });
});

describe('probeImage', () => {
  it.each([
    [224, 224],
    [640, 480],
    [30, 500],
    [1000, 90],
  ])('%dx%d: the same embedding count as decoding, for PNG and JPEG', (w, h) => {
    for (const bytes of [pngBytes(w, h), jpegBytes(w, h)]) {
      expect(probeImage(bytes, DEFAULT_IMAGE_GRID).numEmbeddings).toBe(prepareImage(bytes).numEmbeddings);
    }
  });

  it('honours the grid of the encoder', () => {
    const grid = { ...DEFAULT_IMAGE_GRID, mergeSize: 4, maxPixels: 448 * 448 };
    const bytes = pngBytes(448, 448);
    expect(probeImage(bytes, grid).numEmbeddings).toBe(prepareImage(bytes, { grid }).numEmbeddings);
  });

  it('refuses non-images and absurd shapes; a corrupt body passes the probe (the encoder stage finds it)', () => {
    expect(mediaError(() => probeImage(new TextEncoder().encode('GIF89a....'), DEFAULT_IMAGE_GRID, 'img 0'))).toBe(
      'img 0: not a PNG or JPEG image (unrecognised leading bytes)',
    );
    expect(mediaError(() => probeImage(pngBytes(1, 300), DEFAULT_IMAGE_GRID, 'img 1'))).toMatch(
      /^img 1: image is 1x300; the aspect ratio must be at most 200:1/,
    );
    const corrupt = pngBytes(64, 64);
    corrupt.fill(0, 60); // keeps the header, destroys the compressed pixels
    expect(probeImage(corrupt, DEFAULT_IMAGE_GRID).numEmbeddings).toBe(4);
    expect(mediaError(() => prepareImage(corrupt, { what: 'img 2' }))).toMatch(/^img 2: cannot decode PNG/);
  });
});
