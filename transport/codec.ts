/**
 * The one frame format every connector carries:
 *
 *   [magic u32 "CHF1"][metaLength u32][meta: msgpack][pad to 8][tensor 0 bytes][pad to 8][tensor 1 bytes]...
 *
 * The metadata is msgpack (msgpackr) and describes each tensor (name, dtype, shape, byte offset). Tensor bytes are
 * raw little-endian and 8-byte aligned within the frame, so a decoder returns typed-array *views* over the frame
 * without copying (when the frame itself starts on an 8-byte boundary, which Buffers from the native ring and from
 * Node's allocator do; otherwise decode copies once). Typed arrays never go through msgpack: msgpackr's default
 * Packr silently corrupts Float32Array (NODE-NOTES).
 */
import { Packr } from 'msgpackr';
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';

const MAGIC = 0x31464843; // "CHF1" little-endian
const HEADER_BYTES = 8;
const packr = new Packr({ useRecords: false });

export type DType = 'float32' | 'int32' | 'int64' | 'uint8' | 'int16';
export type TypedArray = Float32Array | Int32Array | BigInt64Array | Uint8Array | Int16Array;

const ctorOf = {
  float32: Float32Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  int16: Int16Array,
} as const;

function dtypeOf(a: TypedArray): DType {
  if (a instanceof Float32Array) return 'float32';
  if (a instanceof Int32Array) return 'int32';
  if (a instanceof BigInt64Array) return 'int64';
  if (a instanceof Int16Array) return 'int16';
  return 'uint8';
}

export interface Tensor {
  readonly data: TypedArray;
  readonly shape: readonly number[];
}

interface TensorDescriptor {
  n: string; // name
  d: DType;
  s: number[]; // shape
  o: number; // byte offset from the frame start
  b: number; // byte length
}

interface WireMeta<M> {
  m: M;
  t: TensorDescriptor[];
}

const align8 = (n: number) => (n + 7) & ~7;

/** Encodes metadata and tensors into frame parts (written by the connector as one frame, no concatenation). */
export function encodeFrame<M>(meta: M, tensors: Readonly<Record<string, Tensor>> = {}): Uint8Array[] {
  const names = Object.keys(tensors);
  // Offsets depend on the metadata length, which depends on the offsets: encode once with placeholders of the
  // final magnitude (offsets are fixed-width in msgpack only per range), then iterate until stable (2 rounds max).
  let descriptors: TensorDescriptor[] = names.map((n) => {
    const t = tensors[n];
    return { n, d: dtypeOf(t.data), s: [...t.shape], o: 0, b: t.data.byteLength };
  });
  let metaBytes = packr.pack({ m: meta, t: descriptors } satisfies WireMeta<M>);
  for (let round = 0; round < 4; round++) {
    let offset = align8(HEADER_BYTES + metaBytes.length);
    const next = descriptors.map((d) => {
      const placed = { ...d, o: offset };
      offset = align8(offset + d.b);
      return placed;
    });
    const nextBytes = packr.pack({ m: meta, t: next } satisfies WireMeta<M>);
    descriptors = next;
    if (nextBytes.length === metaBytes.length) {
      metaBytes = nextBytes;
      break;
    }
    metaBytes = nextBytes;
  }
  const header = new Uint8Array(align8(HEADER_BYTES + metaBytes.length));
  const view = new DataView(header.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, metaBytes.length, true);
  header.set(metaBytes, HEADER_BYTES);
  const parts: Uint8Array[] = [header];
  let position = header.length;
  for (const d of descriptors) {
    if (d.o !== position) throw new ChorusError(ErrorCodes.INTERNAL, `frame layout drifted for tensor ${d.n}`);
    const data = tensors[d.n].data;
    parts.push(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    position += d.b;
    const pad = align8(position) - position;
    if (pad) parts.push(new Uint8Array(pad));
    position += pad;
  }
  return parts;
}

export function frameByteLength(parts: readonly Uint8Array[]): number {
  return parts.reduce((n, p) => n + p.byteLength, 0);
}

/** Concatenates frame parts (for connectors that cannot write parts, and tests). */
export function joinParts(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(frameByteLength(parts));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export interface DecodedFrame<M> {
  readonly meta: M;
  readonly tensors: Readonly<Record<string, Tensor>>;
}

/** Decodes a frame; tensors are views over `frame` when it is 8-byte aligned (keep `frame` alive while used). */
export function decodeFrame<M>(input: Uint8Array): DecodedFrame<M> {
  let frame = input;
  if (frame.byteLength < HEADER_BYTES) throw invalid(`frame of ${frame.byteLength} bytes is shorter than its header`);
  if (frame.byteOffset % 8 !== 0) frame = frame.slice(); // copies into a fresh, aligned buffer
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw invalid('bad magic: not a Chorus frame');
  const metaLength = view.getUint32(4, true);
  if (HEADER_BYTES + metaLength > frame.byteLength) throw invalid(`metadata length ${metaLength} overruns the frame`);
  let wire: WireMeta<M>;
  try {
    wire = packr.unpack(frame.subarray(HEADER_BYTES, HEADER_BYTES + metaLength)) as WireMeta<M>;
  } catch (err) {
    throw new ChorusError(ErrorCodes.FRAME_INVALID, 'frame metadata is not valid msgpack', { cause: err });
  }
  const tensors: Record<string, Tensor> = {};
  for (const d of wire.t ?? []) {
    const Ctor = ctorOf[d.d];
    if (!Ctor) throw invalid(`tensor ${d.n} has unknown dtype ${String(d.d)}`);
    if (d.o % 8 !== 0 || d.o + d.b > frame.byteLength || d.b % Ctor.BYTES_PER_ELEMENT !== 0) {
      throw invalid(`tensor ${d.n} (offset ${d.o}, ${d.b} bytes) does not fit the ${frame.byteLength}-byte frame`);
    }
    const count = d.b / Ctor.BYTES_PER_ELEMENT;
    const expected = d.s.reduce((a, b) => a * b, 1);
    if (expected !== count) throw invalid(`tensor ${d.n} has shape [${d.s}] but ${count} elements`);
    tensors[d.n] = { data: new Ctor(frame.buffer as ArrayBuffer, frame.byteOffset + d.o, count), shape: d.s };
  }
  return { meta: wire.m, tensors };
}

function invalid(message: string): ChorusError {
  return new ChorusError(ErrorCodes.FRAME_INVALID, message);
}
