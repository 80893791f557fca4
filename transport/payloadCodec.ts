/**
 * ChunkBody <-> (frame metadata, tensors). Scalars ride in the msgpack metadata, arrays as raw tensors; decoding
 * checks every field against the body's kind, so a consumer receives a well-formed body or a CHORUS_ERR_FRAME_INVALID
 * naming what was wrong (a producer of another version, a corrupt frame), never a half-read object.
 */
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import type { ChunkBody, MediaFormat, TokenLogprobs, VideoFrames } from '../src/common/payloads.ts';
import type { SerializedError } from '../src/common/errors.ts';
import type { Tensor } from './codec.ts';

/** What travels in the frame metadata: the body's kind and its scalar fields. */
export type WirePayload = Readonly<Record<string, unknown>> & { readonly kind: ChunkBody['kind'] };

export interface EncodedBody {
  readonly payload: WirePayload;
  readonly tensors: Readonly<Record<string, Tensor>>;
}

export function encodeBody(body: ChunkBody): EncodedBody {
  switch (body.kind) {
    case 'media': {
      const { bytes, ...scalars } = body;
      return { payload: scalars, tensors: { bytes: { data: bytes, shape: [bytes.byteLength] } } };
    }
    case 'encoderRows':
      if (body.error) return { payload: { kind: body.kind, item: body.item, error: body.error }, tensors: {} };
      return {
        payload: {
          kind: body.kind,
          item: body.item,
          ...(body.offset ? { offset: body.offset } : {}),
          ...(body.contentKey !== undefined ? { contentKey: body.contentKey } : {}),
        },
        tensors: matrixTensor(matrices.encoderRows, body),
      };
    case 'talkerRows':
      return {
        payload: {
          kind: body.kind,
          ...(body.promptRows !== undefined ? { promptRows: body.promptRows } : {}),
          ...(body.promptBlocks
            ? { blockNames: [...body.promptBlocks.names], blockPositions: body.promptBlocks.positions }
            : {}),
        },
        tensors: matrixTensor(matrices.talkerRows, body),
      };
    case 'codecFrames':
      return {
        payload: { kind: body.kind, contextFrames: body.contextFrames },
        tensors: matrixTensor(matrices.codecFrames, body),
      };
    case 'text': {
      const { logprobs, ...rest } = body;
      return {
        payload: {
          ...rest,
          tokenIds: [...body.tokenIds],
          ...(body.droppedItems ? { droppedItems: [...body.droppedItems] } : {}),
        },
        tensors: logprobs ? logprobTensors(logprobs) : {},
      };
    }
    case 'audio':
      return {
        payload: { kind: body.kind, sampleRateHz: body.sampleRateHz },
        tensors: { pcm: { data: body.pcm, shape: [body.pcm.length] } },
      };
    default:
      return unknownKind(body);
  }
}

/** The body of a received chunk; throws CHORUS_ERR_FRAME_INVALID when a field is missing or of the wrong type. */
export function decodeBody(payload: unknown, tensors: Readonly<Record<string, Tensor>>): ChunkBody {
  const p = new FieldReader(payload);
  const kind = p.string('kind') as ChunkBody['kind'];
  switch (kind) {
    case 'media':
      return {
        kind,
        item: p.integer('item'),
        format: p.oneOf('format', ['wav', 'pcm16', 'image', 'video'] as const satisfies readonly MediaFormat[]),
        ...(p.has('sampleRateHz') ? { sampleRateHz: p.integer('sampleRateHz') } : {}),
        ...(p.has('video') ? { video: videoFrames(p.object('video')) } : {}),
        what: p.string('what'),
        bytes: tensorOf(tensors, 'bytes', Uint8Array, 1).data,
      };
    case 'encoderRows': {
      const item = p.integer('item');
      if (p.has('error')) return { kind, item, error: p.error('error') };
      const contentKey = p.has('contentKey') ? p.string('contentKey') : undefined;
      return {
        kind,
        item,
        ...matrixFields(matrices.encoderRows, tensors),
        ...(p.has('offset') ? { offset: p.integer('offset') } : {}),
        ...(contentKey !== undefined ? { contentKey } : {}),
      };
    }
    case 'talkerRows':
      return {
        kind,
        ...matrixFields(matrices.talkerRows, tensors),
        ...(p.has('promptRows') ? { promptRows: p.integer('promptRows') } : {}),
        ...(p.has('blockNames')
          ? { promptBlocks: { names: p.strings('blockNames'), positions: p.integer('blockPositions') } }
          : {}),
      };
    case 'codecFrames':
      return { kind, ...matrixFields(matrices.codecFrames, tensors), contextFrames: p.integer('contextFrames') };
    case 'text': {
      const tokenIds = p.integers('tokenIds');
      return {
        kind,
        tokenIds,
        ...(tensors.logprobs ? { logprobs: logprobsOf(tensors, tokenIds.length) } : {}),
        ...(p.has('warnings') ? { warnings: p.strings('warnings') } : {}),
        ...(p.has('droppedItems') ? { droppedItems: p.integers('droppedItems') } : {}),
        ...(p.has('cachedTokens') ? { cachedTokens: p.integer('cachedTokens') } : {}),
      };
    }
    case 'audio':
      return { kind, pcm: tensorOf(tensors, 'pcm', Float32Array, 1).data, sampleRateHz: p.integer('sampleRateHz') };
    default:
      throw invalid(`unknown chunk body kind ${JSON.stringify(kind)}`);
  }
}

/**
 * The bodies that carry one matrix: the field that holds it (the tensor has the same name), its element type, and the
 * body fields that name its dimensions in the tensor's order. Encode and decode both read this one declaration, so
 * they cannot disagree on which dimension comes first (codec frames are [codebooks, frames], rows [rows, width]).
 */
const matrices = {
  encoderRows: { field: 'rows', type: Float32Array, dims: ['numRows', 'width'] },
  talkerRows: { field: 'rows', type: Float32Array, dims: ['numRows', 'conditionDim'] },
  codecFrames: { field: 'codes', type: Int32Array, dims: ['numCodebooks', 'numFrames'] },
} as const satisfies Record<string, MatrixLayout>;

interface MatrixLayout {
  readonly field: string;
  readonly type: Ctor<Float32Array | Int32Array>;
  readonly dims: readonly [string, string];
}

/** The element type a layout's constructor makes (on any buffer: a received body's matrix sits in its frame). */
type ElementsOf<C> = C extends Float32ArrayConstructor ? Float32Array : Int32Array;

/** A body's matrix field, and its dimensions' sizes, as a layout names them. */
type MatrixOf<L extends MatrixLayout> = { readonly [F in L['field']]: ElementsOf<L['type']> };
type SizesOf<L extends MatrixLayout> = { readonly [D in L['dims'][number]]: number };

function matrixTensor<L extends MatrixLayout>(layout: L, body: MatrixOf<L> & SizesOf<L>): Record<string, Tensor> {
  const matrix: MatrixOf<L> = body;
  const sizes: SizesOf<L> = body;
  const field: L['field'] = layout.field;
  const [rows, columns]: readonly [L['dims'][number], L['dims'][number]] = layout.dims;
  return { [field]: { data: matrix[field], shape: [sizes[rows], sizes[columns]] } };
}

function matrixFields<L extends MatrixLayout>(
  layout: L,
  tensors: Readonly<Record<string, Tensor>>,
): MatrixOf<L> & SizesOf<L> {
  const matrix = tensorOf(tensors, layout.field, layout.type, 2);
  const [rows, columns] = layout.dims;
  // Computed keys widen to string: the object built is the layout's own fields.
  return { [layout.field]: matrix.data, [rows]: matrix.shape[0], [columns]: matrix.shape[1] } as MatrixOf<L> &
    SizesOf<L>;
}

/** Per token: [chosen logprob, top logprobs...] as floats, the top ids as int32 ([tokens, k] each). */
function logprobTensors(logprobs: readonly TokenLogprobs[]): Record<string, Tensor> {
  const k = logprobs[0]?.top.length ?? 0;
  const values = new Float32Array(logprobs.length * (k + 1));
  const ids = new Int32Array(logprobs.length * k);
  logprobs.forEach((t, i) => {
    values[i * (k + 1)] = t.logprob;
    t.top.forEach((e, j) => {
      values[i * (k + 1) + 1 + j] = e.logprob;
      ids[i * k + j] = e.id;
    });
  });
  const tensors: Record<string, Tensor> = { logprobs: { data: values, shape: [logprobs.length, k + 1] } };
  if (k > 0) tensors.topIds = { data: ids, shape: [logprobs.length, k] };
  return tensors;
}

function logprobsOf(tensors: Readonly<Record<string, Tensor>>, numTokens: number): TokenLogprobs[] {
  const values = tensorOf(tensors, 'logprobs', Float32Array, 2);
  const [rows, width] = values.shape;
  const k = width - 1;
  const ids = k > 0 ? tensorOf(tensors, 'topIds', Int32Array, 2) : { data: new Int32Array(0), shape: [rows, 0] };
  if (rows !== numTokens || ids.shape[0] !== rows || ids.shape[1] !== k)
    throw invalid(`the logprobs tensors do not match the chunk's ${numTokens} tokens`);
  return Array.from({ length: rows }, (_, i) => ({
    logprob: values.data[i * width],
    top: Array.from({ length: k }, (__, j) => ({ id: ids.data[i * k + j], logprob: values.data[i * width + 1 + j] })),
  }));
}

type Ctor<A> = { new (...args: never[]): A; readonly name: string };

function tensorOf<A extends Tensor['data']>(
  tensors: Readonly<Record<string, Tensor>>,
  name: string,
  ctor: Ctor<A>,
  rank: number,
): { data: A; shape: readonly number[] } {
  const t = tensors[name];
  if (!t) throw invalid(`the chunk lacks tensor "${name}"`);
  if (!(t.data instanceof ctor)) throw invalid(`tensor "${name}" is not a ${ctor.name}`);
  if (t.shape.length !== rank) throw invalid(`tensor "${name}" has shape [${t.shape.join(', ')}], want rank ${rank}`);
  return { data: t.data, shape: t.shape };
}

/** Reads typed fields of an untrusted msgpack object, naming the first one that is wrong. */
class FieldReader {
  private readonly o: Record<string, unknown>;

  constructor(
    payload: unknown,
    private readonly at = '',
  ) {
    if (typeof payload !== 'object' || payload === null) throw invalid(`the chunk payload ${at}is not an object`);
    this.o = payload as Record<string, unknown>;
  }

  has(key: string): boolean {
    return this.o[key] !== undefined;
  }

  string(key: string): string {
    const v = this.o[key];
    if (typeof v !== 'string') throw invalid(`payload.${this.at}${key} is not a string`);
    return v;
  }

  integer(key: string): number {
    const v = this.o[key];
    if (!Number.isSafeInteger(v)) throw invalid(`payload.${this.at}${key} is not an integer`);
    return v as number;
  }

  integers(key: string): number[] {
    const v = this.o[key];
    if (!Array.isArray(v) || !v.every((x) => Number.isSafeInteger(x)))
      throw invalid(`payload.${this.at}${key} is not integers`);
    return v as number[];
  }

  strings(key: string): string[] {
    const v = this.o[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
      throw invalid(`payload.${this.at}${key} is not strings`);
    return v as string[];
  }

  number(key: string): number {
    const v = this.o[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`payload.${this.at}${key} is not a finite number`);
    return v;
  }

  /** A nested object's fields, read by its own FieldReader. */
  object(key: string): FieldReader {
    return new FieldReader(this.o[key], `${this.at}${key}.`);
  }

  oneOf<T extends string>(key: string, values: readonly T[]): T {
    const v = this.string(key);
    if (!(values as readonly string[]).includes(v))
      throw invalid(`payload.${this.at}${key} is not one of ${values.join(', ')}`);
    return v as T;
  }

  error(key: string): SerializedError {
    const v = this.o[key] as Partial<SerializedError> | undefined;
    if (typeof v?.code !== 'string' || typeof v.message !== 'string')
      throw invalid(`payload.${this.at}${key} is not an error`);
    return v as SerializedError;
  }
}

/** A video body's frame layout: positive integers, a positive rate, and the key main hashed. */
function videoFrames(v: FieldReader): VideoFrames {
  const positive = (key: 'numFrames' | 'width' | 'height'): number => {
    const n = v.integer(key);
    if (n < 1) throw invalid(`payload.video.${key} is ${n}, not a positive integer`);
    return n;
  };
  const fps = v.number('fps');
  if (!(fps > 0)) throw invalid(`payload.video.fps is ${fps}, not a positive rate`);
  return {
    numFrames: positive('numFrames'),
    width: positive('width'),
    height: positive('height'),
    fps,
    sourceKey: v.string('sourceKey'),
  };
}

function unknownKind(body: never): never {
  throw invalid(`unknown chunk body kind ${JSON.stringify((body as { kind?: unknown }).kind)}`);
}

function invalid(message: string): ChorusError {
  return new ChorusError(ErrorCodes.FRAME_INVALID, message);
}
