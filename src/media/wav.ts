/**
 * WAV (RIFF/WAVE) and raw pcm16 decoding to mono float samples in [-1, 1].
 *
 * Accepted WAV sample formats: integer PCM of 8 (unsigned), 16, 24 or 32 bits, and IEEE float of 32 or
 * 64 bits, plain or WAVE_FORMAT_EXTENSIBLE. Channels are averaged to mono. A data chunk whose declared
 * size runs past the end of the file (streaming writers put 0 or 0xFFFFFFFF there) is read up to the
 * last whole frame present; every other inconsistency is an error, never a guess.
 */
import { mediaInvalid } from './mediaError.ts';

export interface DecodedPcm {
  readonly samples: Float32Array; // mono
  readonly sampleRateHz: number;
  readonly numChannels: number; // of the source, before the downmix
}

/** The Realtime API's input_audio_buffer format: little-endian 16-bit mono at 24 kHz. */
export const PCM16_DEFAULT_RATE_HZ = 24000;

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

export interface FmtChunk {
  readonly format: number;
  readonly numChannels: number;
  readonly sampleRateHz: number;
  readonly blockAlign: number;
  readonly bitsPerSample: number;
}

function ascii(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]);
}

function readFmt(view: DataView, at: number, size: number, what: string): FmtChunk {
  if (size < 16) throw mediaInvalid(what, `fmt chunk is ${size} bytes (needs 16)`);
  let format = view.getUint16(at, true);
  const fmt = {
    numChannels: view.getUint16(at + 2, true),
    sampleRateHz: view.getUint32(at + 4, true),
    blockAlign: view.getUint16(at + 12, true),
    bitsPerSample: view.getUint16(at + 14, true),
  };
  if (format === FORMAT_EXTENSIBLE) {
    // The real format is the first two bytes of the SubFormat GUID, 24 bytes into the extension.
    if (size < 40) throw mediaInvalid(what, 'WAVE_FORMAT_EXTENSIBLE fmt chunk is too short');
    format = view.getUint16(at + 24, true);
  }
  return { format, ...fmt };
}

function checkFmt(fmt: FmtChunk, what: string): void {
  const { format, numChannels, sampleRateHz, bitsPerSample, blockAlign } = fmt;
  if (format !== FORMAT_PCM && format !== FORMAT_FLOAT)
    throw mediaInvalid(what, `WAV sample format ${format} is not supported (use 16-bit PCM or 32-bit float)`);
  const okBits = format === FORMAT_PCM ? [8, 16, 24, 32] : [32, 64];
  if (!okBits.includes(bitsPerSample))
    throw mediaInvalid(what, `${bitsPerSample}-bit ${format === FORMAT_PCM ? 'PCM' : 'float'} WAV is not supported`);
  if (numChannels < 1) throw mediaInvalid(what, 'WAV declares 0 channels');
  if (sampleRateHz < 1000 || sampleRateHz > 384000)
    throw mediaInvalid(what, `WAV sample rate ${sampleRateHz} Hz is out of range (1000..384000)`);
  if (blockAlign !== numChannels * (bitsPerSample / 8))
    throw mediaInvalid(
      what,
      `WAV block align ${blockAlign} does not match ${numChannels} channels of ${bitsPerSample} bits`,
    );
}

function sampleReader(view: DataView, fmt: FmtChunk): (offset: number) => number {
  if (fmt.format === FORMAT_FLOAT) {
    return fmt.bitsPerSample === 32 ? (o) => view.getFloat32(o, true) : (o) => view.getFloat64(o, true);
  }
  switch (fmt.bitsPerSample) {
    case 8:
      return (o) => (view.getUint8(o) - 128) / 128;
    case 16:
      return (o) => view.getInt16(o, true) / 32768;
    case 24:
      return (o) => (view.getUint8(o) | (view.getUint8(o + 1) << 8) | (view.getInt8(o + 2) << 16)) / 8388608;
    default:
      return (o) => view.getInt32(o, true) / 2147483648;
  }
}

/** Where a WAV's samples are and how to read them: the header walk, without touching the samples. */
export interface WavLayout {
  readonly sampleRateHz: number;
  readonly numChannels: number;
  /** Whole frames present (a data chunk declared longer than the file is read up to its last whole frame). */
  readonly numFrames: number;
  readonly dataStart: number;
  readonly fmt: FmtChunk;
}

/** Reads and checks a WAV's header chunks (cheap: the samples are not decoded). */
export function readWavLayout(bytes: Uint8Array, what = 'wav audio'): WavLayout {
  if (bytes.length < 12 || ascii(bytes, 0) !== 'RIFF' || ascii(bytes, 8) !== 'WAVE') {
    throw mediaInvalid(what, 'not a WAV file (no RIFF/WAVE header)');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fmt: FmtChunk | null = null;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = ascii(bytes, at);
    const declared = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      if (body + declared > bytes.length) throw mediaInvalid(what, 'fmt chunk is truncated');
      fmt = readFmt(view, body, declared, what);
      checkFmt(fmt, what);
    } else if (id === 'data') {
      if (!fmt) throw mediaInvalid(what, 'data chunk comes before the fmt chunk');
      const available = Math.min(declared, bytes.length - body);
      const numFrames = Math.floor(available / fmt.blockAlign);
      return { sampleRateHz: fmt.sampleRateHz, numChannels: fmt.numChannels, numFrames, dataStart: body, fmt };
    }
    at = body + declared + (declared & 1); // chunks are padded to an even size
  }
  throw mediaInvalid(what, fmt ? 'WAV has no data chunk' : 'WAV has no fmt chunk');
}

export function decodeWav(bytes: Uint8Array, what = 'wav audio'): DecodedPcm {
  const layout = readWavLayout(bytes, what);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    samples: downmix(view, layout.dataStart, layout.numFrames, layout.fmt),
    sampleRateHz: layout.sampleRateHz,
    numChannels: layout.numChannels,
  };
}

function downmix(view: DataView, start: number, numFrames: number, fmt: FmtChunk): Float32Array {
  const read = sampleReader(view, fmt);
  const width = fmt.bitsPerSample / 8;
  const out = new Float32Array(numFrames);
  for (let f = 0; f < numFrames; f++) {
    let sum = 0;
    const frame = start + f * fmt.blockAlign;
    for (let c = 0; c < fmt.numChannels; c++) sum += read(frame + c * width);
    out[f] = sum / fmt.numChannels;
  }
  return out;
}

/** Raw little-endian 16-bit mono PCM (no header). */
export function decodePcm16(bytes: Uint8Array, sampleRateHz = PCM16_DEFAULT_RATE_HZ, what = 'pcm16 audio'): DecodedPcm {
  if (bytes.length % 2 !== 0)
    throw mediaInvalid(what, `pcm16 audio has an odd number of bytes (${bytes.length}); each sample is 2 bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(bytes.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
  return { samples, sampleRateHz, numChannels: 1 };
}
