/**
 * Audio input -> what the audio encoder reads. Decoding (wav | pcm16) and resampling to 16 kHz happen
 * once; the samples at 16 kHz are what the cache key hashes (src/media/mediaKey.ts), so a cache hit
 * can skip the mel features as well as the encoder.
 *
 * Embedding count: the mel front end gives floor(n / 160) frames (100 per second) and the encoder's two
 * stride-2 convolutions keep ceil(frames / 4) of them: 25 embeddings per second of audio.
 */
import type { AudioFeatures } from './types.ts';
import { logMelSpectrogram, MEL_HOP_SAMPLES, MEL_SAMPLE_RATE_HZ, melFrameCount } from './logMel.ts';
import { mediaInvalid } from './mediaError.ts';
import { resample } from './resample.ts';

/**
 * Mel frames per audio embedding (100 frames/s -> 25 rows/s): the contract between main, which counts an audio
 * item's rows from its header, and every audio encoder (the generated one's two stride-2 convolutions; a
 * bring-your-own encoder is checked against it at load).
 */
export const AUDIO_FRAMES_PER_EMBEDDING = 4;
/** Audio rows per second of sound (100 mel frames / 4): the time axis a clip's track is interleaved on. */
export const AUDIO_ROWS_PER_SECOND = MEL_SAMPLE_RATE_HZ / MEL_HOP_SAMPLES / AUDIO_FRAMES_PER_EMBEDDING;
import { decodePcm16, decodeWav, PCM16_DEFAULT_RATE_HZ, type DecodedPcm } from './wav.ts';

export type AudioFormat = 'wav' | 'pcm16';

export const AUDIO_SAMPLE_RATE_HZ = MEL_SAMPLE_RATE_HZ;
/** One mel frame (10 ms): anything shorter would give no embedding at all. */
export const MIN_AUDIO_SAMPLES_16K = 160;
export const DEFAULT_MAX_AUDIO_SECONDS = 20 * 60;

export interface AudioDecodeOptions {
  /** Rate of headerless pcm16 (default 24000, the Realtime API's). */
  readonly pcm16RateHz?: number;
  /** Longer inputs are refused before resampling (default 20 minutes). */
  readonly maxSeconds?: number;
  /** Names the item in error messages, e.g. "messages[0].content[1] (input_audio)". */
  readonly what?: string;
}

/** Embeddings the audio encoder produces for this many 16 kHz samples (25 per second). */
export function audioEmbeddingCount(numSamples16k: number): number {
  return Math.ceil(melFrameCount(numSamples16k) / AUDIO_FRAMES_PER_EMBEDDING);
}

/** Decodes wav or pcm16 bytes to mono float samples at 16 kHz. */
export function decodeAudio(bytes: Uint8Array, format: AudioFormat, options: AudioDecodeOptions = {}): Float32Array {
  const what = options.what ?? `${format} audio`;
  let pcm: DecodedPcm;
  if (format === 'wav') pcm = decodeWav(bytes, what);
  else if (format === 'pcm16') pcm = decodePcm16(bytes, options.pcm16RateHz ?? PCM16_DEFAULT_RATE_HZ, what);
  else throw mediaInvalid(what, `audio format "${String(format)}" is not supported (use wav or pcm16)`);
  const maxSeconds = options.maxSeconds ?? DEFAULT_MAX_AUDIO_SECONDS;
  const seconds = pcm.samples.length / pcm.sampleRateHz;
  if (seconds > maxSeconds)
    throw mediaInvalid(what, `audio is ${seconds.toFixed(1)} s long; the limit is ${maxSeconds} s`);
  for (let i = 0; i < pcm.samples.length; i++) {
    if (!Number.isFinite(pcm.samples[i])) throw mediaInvalid(what, `sample ${i} is not a finite number`);
  }
  const samples = resample(pcm.samples, pcm.sampleRateHz, AUDIO_SAMPLE_RATE_HZ);
  if (samples.length < MIN_AUDIO_SAMPLES_16K) {
    throw mediaInvalid(
      what,
      `audio is ${((1000 * pcm.samples.length) / pcm.sampleRateHz).toFixed(1)} ms long; at least 10 ms is needed`,
    );
  }
  return samples;
}

/** 16 kHz samples -> the audio encoder's input (log-mel features) with its embedding count. */
export function audioFeatures(samples16k: Float32Array): AudioFeatures {
  const { mel, numMelBins, numFrames } = logMelSpectrogram(samples16k);
  return { modality: 'audio', mel, numMelBins, numFrames, numEmbeddings: audioEmbeddingCount(samples16k.length) };
}
