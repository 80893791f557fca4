/**
 * A GGUF file (llama.cpp's model format, version 2 or 3): the header, the metadata key/values, the tensor infos
 * and the aligned data section. The header is parsed from the front of the file; tensor bytes are read on demand
 * (readTensor), so a model is never held twice in memory while it is converted.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count; each metadata entry is a
 * string key, a u32 value type and the value (arrays: u32 element type, u64 count, elements); each tensor info is
 * a string name, u32 dimension count, u64 dims (ne[0] first: the fastest-varying), u32 ggml type and a u64 offset
 * from the data section, which starts at the next multiple of general.alignment (default 32) after the infos.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import { ggmlType, tensorByteLength, type GgmlType } from './ggmlTypes.ts';

export type GgufValue = number | bigint | boolean | string | GgufValue[];

export interface GgufTensorInfo {
  readonly name: string;
  /** ne[0] first: a [rows, cols] matrix in row-major order is dims [cols, rows]. */
  readonly dims: readonly number[];
  readonly type: GgmlType;
  /** From the start of the data section. */
  readonly offset: number;
  readonly byteLength: number;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;
const FIRST_READ_BYTES = 4 * 1024 * 1024; // doubled until the header fits (SmolLM2-135M's is ~1.6 MB)

/** Thrown by the cursor when the header runs past the bytes read so far: read more and parse again. */
class NeedMoreBytes extends Error {}

class Cursor {
  pos = 0;
  private readonly view: DataView;
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  constructor(
    private readonly bytes: Uint8Array,
    private readonly complete: boolean,
    private readonly path: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private take(n: number): number {
    if (this.pos + n > this.bytes.byteLength) {
      if (!this.complete) throw new NeedMoreBytes();
      throw invalid(this.path, `ends inside its header (at byte ${this.pos}, needed ${n} more)`);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  u8 = () => this.view.getUint8(this.take(1));
  i8 = () => this.view.getInt8(this.take(1));
  u16 = () => this.view.getUint16(this.take(2), true);
  i16 = () => this.view.getInt16(this.take(2), true);
  u32 = () => this.view.getUint32(this.take(4), true);
  i32 = () => this.view.getInt32(this.take(4), true);
  f32 = () => this.view.getFloat32(this.take(4), true);
  f64 = () => this.view.getFloat64(this.take(8), true);
  i64 = () => this.view.getBigInt64(this.take(8), true);
  /** A u64 that must fit a JS number (counts, lengths, offsets). */
  count(): number {
    const v = this.view.getBigUint64(this.take(8), true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(this.path, `has a count or offset of ${v}`);
    return Number(v);
  }
  u64(): number | bigint {
    const v = this.view.getBigUint64(this.take(8), true);
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  string(): string {
    const length = this.count();
    const at = this.take(length);
    return this.decoder.decode(this.bytes.subarray(at, at + length));
  }
}

function invalid(path: string, problem: string): ChorusError {
  return new ChorusError(ErrorCodes.GGUF_INVALID, `${path} is not a GGUF file Chorus can read: it ${problem}`);
}

/**
 * GGUF's metadata value types, indexed by their code (the spec's GGUF_METADATA_VALUE_TYPE: UINT8 = 0 ... FLOAT64 = 12);
 * each number and string type named after the Cursor method that reads it.
 */
const VALUE_TYPES = [
  'u8',
  'i8',
  'u16',
  'i16',
  'u32',
  'i32',
  'f32',
  'bool',
  'string',
  'array',
  'u64',
  'i64',
  'f64',
] as const;

function readValue(c: Cursor, type: number, path: string, key: string): GgufValue {
  const name = VALUE_TYPES[type];
  switch (name) {
    case undefined:
      throw invalid(path, `has metadata ${key} of unknown value type ${type}`);
    case 'bool':
      return c.u8() !== 0;
    case 'array': {
      const elementType = c.u32();
      const length = c.count();
      const items = new Array<GgufValue>(length);
      for (let i = 0; i < length; i++) items[i] = readValue(c, elementType, path, key);
      return items;
    }
    default:
      return c[name]();
  }
}

interface Header {
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
  readonly dataOffset: number;
}

function parseHeader(c: Cursor, path: string, fileBytes: number): Header {
  if (c.u32() !== MAGIC) throw invalid(path, 'does not start with "GGUF"');
  const version = c.u32();
  if (version !== 2 && version !== 3) throw invalid(path, `is GGUF version ${version} (2 and 3 are read)`);
  const tensorCount = c.count();
  const kvCount = c.count();
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.string();
    metadata.set(key, readValue(c, c.u32(), path, key));
  }
  const tensors: GgufTensorInfo[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = c.string();
    const dims = Array.from({ length: c.u32() }, () => c.count());
    const type = ggmlType(c.u32(), name, path);
    const offset = c.count();
    tensors.push({ name, dims, type, offset, byteLength: tensorByteLength(type, dims, name, path) });
  }
  const alignment = metadata.get('general.alignment') ?? DEFAULT_ALIGNMENT;
  if (typeof alignment !== 'number' || alignment <= 0 || alignment % 8 !== 0)
    throw invalid(path, `has general.alignment ${String(alignment)} (a positive multiple of 8 is expected)`);
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  for (const t of tensors) {
    if (t.offset % alignment !== 0 || dataOffset + t.offset + t.byteLength > fileBytes)
      throw invalid(path, `has tensor ${t.name} at data offset ${t.offset} (${t.byteLength} bytes) outside the file`);
  }
  return { version, metadata, tensors, dataOffset };
}

export class GgufFile implements Header {
  private constructor(
    readonly path: string,
    private readonly fd: number,
    readonly version: number,
    readonly metadata: ReadonlyMap<string, GgufValue>,
    readonly tensors: readonly GgufTensorInfo[],
    readonly dataOffset: number,
  ) {}

  /** Opens and parses the header; close() releases the file. */
  static open(path: string): GgufFile {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err) {
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `cannot open GGUF file ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    try {
      const fileBytes = fstatSync(fd).size;
      for (let want = FIRST_READ_BYTES; ; want *= 2) {
        const length = Math.min(want, fileBytes);
        const bytes = new Uint8Array(length);
        readSync(fd, bytes, 0, length, 0);
        try {
          const h = parseHeader(new Cursor(bytes, length === fileBytes, path), path, fileBytes);
          return new GgufFile(path, fd, h.version, h.metadata, h.tensors, h.dataOffset);
        } catch (err) {
          if (!(err instanceof NeedMoreBytes)) throw err;
        }
      }
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  tensor(name: string): GgufTensorInfo | undefined {
    return this.tensors.find((t) => t.name === name);
  }

  /** The raw (still quantized) bytes of one tensor. */
  readTensor(info: GgufTensorInfo): Uint8Array {
    const bytes = new Uint8Array(info.byteLength);
    const read = readSync(this.fd, bytes, 0, info.byteLength, this.dataOffset + info.offset);
    if (read !== info.byteLength) throw invalid(this.path, `ends inside tensor ${info.name}`);
    return bytes;
  }

  close(): void {
    closeSync(this.fd);
  }
}
