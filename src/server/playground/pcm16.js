// The Realtime API's audio, both ways: 24 kHz mono pcm16, base64 on the wire. Shared by the page and the microphone's
// AudioWorklet: micWorklet.js imports this module in the audio thread's scope, where only the Resampler runs.

export const SAMPLE_RATE_HZ = 24000; // the Realtime API's pcm16 rate, both ways
export const MIC_CHUNK_MS = 20; // one input_audio_buffer.append per 20 ms of speech (the server VAD's timeline grain)
export const MIC_CHUNK_SAMPLES = (SAMPLE_RATE_HZ * MIC_CHUNK_MS) / 1000;
export const MIC_PROCESSOR = 'chorus-mic'; // the AudioWorkletProcessor's registered name

/**
 * Streaming resampler to 24 kHz pcm16 by box-filter integration: each output sample is the mean of the input over
 * its own 1/24000 s (fractional overlaps weighted). That low-passes enough for speech at 44.1/48 kHz in, needs no
 * lookahead, and carries its phase across blocks so chunk boundaries leave no clicks. Input at or below 24 kHz is
 * held (each output sample takes the input sample it falls in). Whole chunks go to `onChunk(pcm16, rms)`.
 */
export class Resampler {
  constructor(inputRateHz, chunkSamples, onChunk) {
    this.ratio = inputRateHz / SAMPLE_RATE_HZ; // input samples per output sample
    this.sum = 0; // weighted input toward the output sample being built
    this.filled = 0; // how much of it (in input samples, 0..ratio) is covered
    this.chunkSamples = chunkSamples;
    this.chunk = new Int16Array(chunkSamples);
    this.at = 0;
    this.sumSquares = 0;
    this.onChunk = onChunk;
  }

  push(input) {
    const r = this.ratio;
    for (let i = 0; i < input.length; i++) {
      const x = input[i];
      let remaining = 1; // of this input sample, still to be assigned to output samples
      while (this.filled + remaining >= r) {
        const take = r - this.filled;
        this.emit((this.sum + x * take) / r);
        this.sum = 0;
        this.filled = 0;
        remaining -= take;
      }
      this.sum += x * remaining;
      this.filled += remaining;
    }
  }

  emit(y) {
    const clamped = Math.max(-1, Math.min(1, y));
    this.chunk[this.at++] = Math.round(clamped < 0 ? clamped * 32768 : clamped * 32767);
    this.sumSquares += clamped * clamped;
    if (this.at < this.chunkSamples) return;
    this.onChunk(this.chunk, Math.sqrt(this.sumSquares / this.chunkSamples));
    this.chunk = new Int16Array(this.chunkSamples); // the previous one was handed over (transferred)
    this.at = 0;
    this.sumSquares = 0;
  }
}

/** Little-endian pcm16 to base64 (typed arrays use the platform's byte order, little-endian on every browser). */
export function pcmToBase64(pcm) {
  const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function base64ToBytes(base64) {
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}
