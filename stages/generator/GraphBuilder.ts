/**
 * A small builder for ONNX graphs over onnx-proto (opset 17, IR 8: both load in onnxruntime 1.30).
 * Initializers are stored as rawData, little-endian (the ONNX rule; this machine is little-endian, checked
 * below so a big-endian host fails loudly instead of writing garbage weights).
 */
import { endianness } from 'node:os';
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

export const OPSET_VERSION = 17;
export const IR_VERSION = 8;

export type DType = 'float32' | 'int64' | 'int32' | 'bool' | 'uint8';
export type Dim = number | string;

/** Plain numbers are INT attributes; floats must be wrapped ({ f }) so 1.0 never turns into 1. */
export type Attr =
  number | readonly number[] | string | { readonly f: number } | { readonly floats: readonly number[] };

const dataTypes: Record<DType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  bool: onnx.TensorProto.DataType.BOOL,
  uint8: onnx.TensorProto.DataType.UINT8,
};

type TensorData = Float32Array | BigInt64Array | Int32Array | Uint8Array;

if (endianness() !== 'LE')
  throw new Error('GraphBuilder writes rawData from typed arrays and needs a little-endian host');

function valueInfo(name: string, dtype: DType, dims: readonly Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: dataTypes[dtype],
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: Attr): onnxProto.onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof value === 'number') return { name, type: T.INT, i: value };
  if (typeof value === 'string') return { name, type: T.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: T.INTS, ints: [...(value as number[])] };
  if ('f' in value) return { name, type: T.FLOAT, f: value.f };
  return { name, type: T.FLOATS, floats: [...(value as { floats: number[] }).floats] };
}

export class GraphBuilder {
  private readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private readonly inits: onnxProto.onnx.ITensorProto[] = [];
  private readonly inputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly outputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly counters = new Map<string, number>();
  private readonly constCache = new Map<string, string>();
  /** Operator sets beyond ONNX's own that the nodes use (e.g. com.microsoft for onnxruntime's contrib ops). */
  private readonly domains = new Set<string>();

  constructor(private readonly name: string) {}

  /** A fresh value name: `${prefix}_${n}`. */
  fresh(prefix: string): string {
    const n = this.counters.get(prefix) ?? 0;
    this.counters.set(prefix, n + 1);
    return `${prefix}_${n}`;
  }

  input(name: string, dtype: DType, dims: readonly Dim[]): string {
    this.inputs.push(valueInfo(name, dtype, dims));
    return name;
  }

  /** Declares a graph output; some node must produce a value of that name (use `node(..., [name])`). */
  output(name: string, dtype: DType, dims: readonly Dim[]): void {
    this.outputs.push(valueInfo(name, dtype, dims));
  }

  initializer(name: string, dtype: DType, dims: readonly number[], data: TensorData): string {
    const count = dims.reduce((a, b) => a * b, 1);
    if (data.length !== count)
      throw new Error(`initializer ${name}: ${data.length} values for dims [${dims.join(', ')}]`);
    const rawData = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.inits.push({ name, dataType: dataTypes[dtype], dims: [...dims], rawData });
    return name;
  }

  /** Small constants, deduplicated by value so repeated shapes/scalars share one initializer. */
  constF32(values: readonly number[], dims: readonly number[] = values.length === 1 ? [] : [values.length]): string {
    return this.cachedConst('f', values, dims, () => Float32Array.from(values), 'float32');
  }

  constI64(values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.cachedConst('i', values, dims, () => BigInt64Array.from(values.map((v) => BigInt(v))), 'int64');
  }

  private cachedConst(
    tag: string,
    values: readonly number[],
    dims: readonly number[],
    make: () => TensorData,
    dtype: DType,
  ): string {
    const key = `${tag}:${dims.join('x')}:${values.join(',')}`;
    const hit = this.constCache.get(key);
    if (hit) return hit;
    const name = this.initializer(this.fresh(`const_${tag}`), dtype, dims, make());
    this.constCache.set(key, name);
    return name;
  }

  /** Adds a node; returns its output names (fresh ones unless given). An empty input name means "omitted". */
  node(
    opType: string,
    inputs: readonly string[],
    attrs: Readonly<Record<string, Attr>> = {},
    outputs: number | readonly string[] = 1,
    domain = '',
  ): string[] {
    if (domain) this.domains.add(domain);
    const outNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, () => this.fresh(opType.toLowerCase()))
        : [...outputs];
    this.nodes.push({
      opType,
      name: this.fresh(`n_${opType}`),
      input: [...inputs],
      output: outNames,
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
      ...(domain ? { domain } : {}),
    });
    return outNames;
  }

  /** A single-output node. */
  op(opType: string, inputs: readonly string[], attrs: Readonly<Record<string, Attr>> = {}, output?: string): string {
    return this.node(opType, inputs, attrs, output ? [output] : 1)[0];
  }

  toBytes(docString = ''): Uint8Array {
    const model: onnxProto.onnx.IModelProto = {
      irVersion: IR_VERSION,
      opsetImport: [
        { domain: '', version: OPSET_VERSION },
        ...[...this.domains].map((domain) => ({ domain, version: 1 })),
      ],
      producerName: 'chorus',
      producerVersion: '1',
      docString,
      graph: { name: this.name, node: this.nodes, initializer: this.inits, input: this.inputs, output: this.outputs },
    };
    return onnx.ModelProto.encode(model).finish();
  }
}
