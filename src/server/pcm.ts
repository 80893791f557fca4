/**
 * Audio encodings for clients: float32 [-1, 1] -> pcm16 little-endian, base64, and a WAV container.
 * Written out by hand because the formats are tiny and fixed (RIFF/WAVE, PCM, mono, 16-bit).
 */

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Float PCM to 16-bit little-endian. Asymmetric scale so that n/32767 maps back to exactly n and -1 to -32768. */
export function floatToPcm16(samples: Float32Array): Buffer {
  // Through an Int16Array where the machine is little-endian (x64, arm64; not s390x): a plain store per
  // sample instead of Buffer.writeInt16LE's checked call (the server converts every chunk of audio it sends).
  if (LITTLE_ENDIAN) {
    const pcm = new Int16Array(samples.length);
    writePcm16(samples, pcm);
    return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  }
  const out = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(pcm16Of(samples[i]), i * 2);
  return out;
}

/** The samples' pcm16 values into `out` (at least as long), in the machine's byte order. */
function writePcm16(samples: Float32Array, out: Int16Array): void {
  for (let i = 0; i < samples.length; i++) out[i] = pcm16Of(samples[i]);
}

function pcm16Of(sample: number): number {
  let x = sample;
  if (!(x > -1))
    x = -1; // also maps NaN to -1 instead of writing garbage
  else if (x > 1) x = 1;
  // Math.round(y) for y in [-32768, 32767]: y + 32768.5 is positive, so truncating it is flooring it.
  return (((x < 0 ? x * 32768 : x * 32767) + 32768.5) | 0) - 32768;
}

/**
 * The pcm16 bytes only live until they are base64: they go through one scratch array, grown to the largest chunk
 * up to this many samples (10 s at 24 kHz), instead of a fresh zero-filled one per chunk. Main converts every audio
 * chunk it streams (issue 46: at c=10 the allocation was half of the conversion's CPU).
 */
const SCRATCH_MAX_SAMPLES = 240_000;
let scratch = new Int16Array(0);

export function pcm16ToBase64(samples: Float32Array): string {
  if (!LITTLE_ENDIAN || samples.length > SCRATCH_MAX_SAMPLES) return floatToPcm16(samples).toString('base64');
  if (scratch.length < samples.length) scratch = new Int16Array(samples.length);
  writePcm16(samples, scratch);
  // toString copies the bytes out (base64), so the scratch is free again when it returns.
  return Buffer.from(scratch.buffer, 0, samples.length * 2).toString('base64');
}

/** A complete mono 16-bit PCM WAV file around `pcm16` (little-endian sample bytes). */
export function wavFromPcm16(pcm16: Buffer, sampleRateHz: number): Buffer {
  const header = Buffer.alloc(44);
  const bytesPerSample = 2;
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm16.length, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRateHz, 24);
  header.writeUInt32LE(sampleRateHz * bytesPerSample, 28); // byte rate
  header.writeUInt16LE(bytesPerSample, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm16.length, 40);
  return Buffer.concat([header, pcm16]);
}

// Strict base64 lives with the other base64 and data: URL decoding (src/media/mediaUrl.ts).
export { decodeBase64Strict } from '../media/mediaUrl.ts';
