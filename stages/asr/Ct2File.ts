/**
 * A CTranslate2 model file (model.bin, the format faster-whisper loads): a little-endian header (format version,
 * the spec's name and revision), then each variable as name, rank, dims, dtype, byte count and raw data, then
 * aliases (one name standing for another: Whisper's output projection is its token embedding). Read whole, with
 * every offset checked, so a truncated or foreign file fails naming where reading stopped.
 */
import { readFileSync } from 'node:fs';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { float16ToFloat32 } from '../thinker/gguf/float16.ts';

/** CTranslate2's DataType enum, the values its writer uses. */
const DTYPES: Record<number, { name: string; bytes: number }> = {
  0: { name: 'float32', bytes: 4 },
  1: { name: 'int8', bytes: 1 },
  2: { name: 'int16', bytes: 2 },
  3: { name: 'int32', bytes: 4 },
  4: { name: 'float16', bytes: 2 },
};
const SUPPORTED_VERSIONS = [5, 6];

interface Variable {
  readonly dims: readonly number[];
  readonly dtype: number;
  readonly offset: number;
  readonly count: number;
}

export class Ct2File {
  readonly specName: string;
  readonly #bytes: Buffer;
  readonly #vars = new Map<string, Variable>();

  private constructor(
    readonly path: string,
    bytes: Buffer,
  ) {
    this.#bytes = bytes;
    let at = 0;
    const fail = (what: string) =>
      new ChorusError(
        ErrorCodes.MODEL_LOAD,
        `${path} is not a CTranslate2 model file Chorus can read: ${what} at byte ${at}`,
      );
    const need = (n: number) => {
      if (at + n > bytes.length) throw fail(`truncated (${n} bytes wanted)`);
    };
    const u8 = () => (need(1), bytes.readUInt8(at++));
    const u16 = () => (need(2), (at += 2), bytes.readUInt16LE(at - 2));
    const u32 = () => (need(4), (at += 4), bytes.readUInt32LE(at - 4));
    const str = () => {
      const n = u16();
      need(n);
      at += n;
      return bytes.toString('utf8', at - n, at - 1); // NUL-terminated
    };
    const version = u32();
    if (!SUPPORTED_VERSIONS.includes(version)) throw fail(`format version ${version} (supported: 5, 6)`);
    this.specName = str();
    u32(); // the spec's revision
    const numVars = u32();
    for (let i = 0; i < numVars; i++) {
      const name = str();
      const dims = Array.from({ length: u8() }, u32);
      const dtype = u8();
      const numBytes = u32();
      const type = DTYPES[dtype];
      if (!type) throw fail(`variable ${name} has data type ${dtype}`);
      need(numBytes);
      this.#vars.set(name, { dims, dtype, offset: at, count: numBytes / type.bytes });
      at += numBytes;
    }
    const numAliases = u32();
    for (let i = 0; i < numAliases; i++) {
      const alias = str();
      const target = this.#vars.get(str());
      if (target) this.#vars.set(alias, target);
    }
  }

  static open(path: string): Ct2File {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (cause) {
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `cannot read ${path}: ${(cause as Error).message}`, { cause });
    }
    return new Ct2File(path, bytes);
  }

  has(name: string): boolean {
    return this.#vars.has(name);
  }

  dims(name: string): readonly number[] {
    return this.#get(name).dims;
  }

  /** A float variable as float32 (half precision widened), checked against the dims the caller expects. */
  floats(name: string, dims: readonly number[]): Float32Array {
    const v = this.#get(name);
    if (v.dims.join(',') !== dims.join(','))
      throw new ChorusError(
        ErrorCodes.MODEL_LOAD,
        `${this.path}: ${name} has dims [${v.dims.join(', ')}], expected [${dims.join(', ')}]`,
      );
    const out = new Float32Array(v.count);
    if (v.dtype === 0) {
      for (let i = 0; i < v.count; i++) out[i] = this.#bytes.readFloatLE(v.offset + 4 * i);
    } else if (v.dtype === 4) {
      for (let i = 0; i < v.count; i++) out[i] = float16ToFloat32(this.#bytes.readUInt16LE(v.offset + 2 * i));
    } else {
      throw new ChorusError(
        ErrorCodes.MODEL_LOAD,
        `${this.path}: ${name} is ${DTYPES[v.dtype].name}; Chorus reads float32 and float16 weights (convert the ` +
          'model with ct2-transformers-converter --quantization float16)',
      );
    }
    return out;
  }

  /** A scalar integer variable (e.g. num_heads). */
  integer(name: string): number {
    const v = this.#get(name);
    if (v.dtype === 1) return this.#bytes.readInt8(v.offset);
    if (v.dtype === 2) return this.#bytes.readInt16LE(v.offset);
    if (v.dtype === 3) return this.#bytes.readInt32LE(v.offset);
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `${this.path}: ${name} is not an integer`);
  }

  #get(name: string): Variable {
    const v = this.#vars.get(name);
    if (!v) throw new ChorusError(ErrorCodes.MODEL_LOAD, `${this.path} has no variable ${name}`);
    return v;
  }
}
