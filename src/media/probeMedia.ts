/**
 * What main needs of a media item before admitting a request, from headers alone: its embedding count (for the
 * placeholder expansion) and whether it is usable at all. Decoding, resampling, the mel features and image
 * patches cost ~100 ms for 30 s of audio and up to ~250 ms for a large JPEG (measured by bench/encoders/, since
 * deleted), far too much for the server thread, so they run in the encoder stage; these probes cost microseconds.
 *
 * The counts equal what prepareAudio / prepareImage produce (test/unit/mediaProbe.test.ts holds that), and the
 * checks that can be made here throw the same CHORUS_ERR_MEDIA_INVALID messages. What only a full decode can
 * find (a corrupt PNG or JPEG body, a NaN in a float WAV) surfaces in the encoder stage, naming the same item.
 */
import {
  audioEmbeddingCount,
  AUDIO_SAMPLE_RATE_HZ,
  DEFAULT_MAX_AUDIO_SECONDS,
  MIN_AUDIO_SAMPLES_16K,
  type AudioDecodeOptions,
  type AudioFormat,
} from './audio.ts';
import { probeImageSize } from './image.ts';
import { DEFAULT_IMAGE_GRID, imageGrid, type ImageGridConfig } from './imagePatches.ts';
import { mediaInvalid } from './mediaError.ts';
import { resampledLength } from './resample.ts';
import { PCM16_DEFAULT_RATE_HZ, readWavLayout } from './wav.ts';

export interface AudioProbe {
  readonly numEmbeddings: number;
  readonly seconds: number;
}

export interface ImageProbe {
  readonly numEmbeddings: number;
  readonly width: number;
  readonly height: number;
}

export function probeAudio(bytes: Uint8Array, format: AudioFormat, options: AudioDecodeOptions = {}): AudioProbe {
  const what = options.what ?? `${format} audio`;
  let sampleRateHz: number;
  let numSamples: number;
  if (format === 'wav') {
    const layout = readWavLayout(bytes, what);
    sampleRateHz = layout.sampleRateHz;
    numSamples = layout.numFrames;
  } else if (format === 'pcm16') {
    if (bytes.length % 2 !== 0)
      throw mediaInvalid(what, `pcm16 audio has an odd number of bytes (${bytes.length}); each sample is 2 bytes`);
    sampleRateHz = options.pcm16RateHz ?? PCM16_DEFAULT_RATE_HZ;
    if (!Number.isInteger(sampleRateHz) || sampleRateHz < 1000 || sampleRateHz > 384000) {
      throw mediaInvalid(what, `pcm16 sample rate ${sampleRateHz} Hz is out of range (an integer in 1000..384000)`);
    }
    numSamples = bytes.length / 2;
  } else {
    throw mediaInvalid(what, `audio format "${String(format)}" is not supported (use wav or pcm16)`);
  }
  const maxSeconds = options.maxSeconds ?? DEFAULT_MAX_AUDIO_SECONDS;
  const seconds = numSamples / sampleRateHz;
  if (seconds > maxSeconds)
    throw mediaInvalid(what, `audio is ${seconds.toFixed(1)} s long; the limit is ${maxSeconds} s`);
  const numSamples16k = resampledLength(numSamples, sampleRateHz, AUDIO_SAMPLE_RATE_HZ);
  if (numSamples16k < MIN_AUDIO_SAMPLES_16K) {
    throw mediaInvalid(
      what,
      `audio is ${((1000 * numSamples) / sampleRateHz).toFixed(1)} ms long; at least 10 ms is needed`,
    );
  }
  return { numEmbeddings: audioEmbeddingCount(numSamples16k), seconds };
}

export function probeImage(bytes: Uint8Array, grid: ImageGridConfig = DEFAULT_IMAGE_GRID, what = 'image'): ImageProbe {
  const { width, height } = probeImageSize(bytes, what);
  const g = imageGrid(width, height, grid, what);
  return { numEmbeddings: (g.gridWidth * g.gridHeight) / (grid.mergeSize * grid.mergeSize), width, height };
}
