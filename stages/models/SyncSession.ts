/**
 * A synchronous onnxruntime session. The public InferenceSession.run() computes synchronously anyway but
 * resolves through a setImmediate, which costs an event-loop turn per step and cannot serve the
 * synchronous runner interfaces (stages/types.ts). So this is the one file that reaches into
 * onnxruntime-node's binding (pinned ~1.30: dist/binding.js -> { binding, initOrt }) and declares the
 * surface it uses, the way onnxruntime-node's own backend.ts does. If a future version moves it,
 * create() fails with CHORUS_ERR_MODEL_LOAD naming this file rather than misbehaving later.
 */
import { createRequire } from 'node:module';
import * as ort from 'onnxruntime-node';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { onnxTelemetryOff } from '../../src/common/onnxTelemetry.ts';
import type { EngineArgs } from '../../src/common/graph.ts';

interface RawValueMetadata {
  readonly name: string;
  readonly isTensor: boolean;
  readonly type: number;
  readonly shape: readonly number[];
  readonly symbolicDimensions: readonly string[];
}

interface RawSession {
  loadModel(path: string, options: object): void;
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: object): void;
  readonly inputMetadata: readonly RawValueMetadata[];
  readonly outputMetadata: readonly RawValueMetadata[];
  run(
    feeds: Record<string, ort.Tensor>,
    fetches: Record<string, ort.Tensor | null>,
    options: object,
  ): Record<string, ort.Tensor>;
  dispose(): void;
}

interface RawBindingModule {
  binding: { InferenceSession: new () => RawSession };
  initOrt(): void;
}

export interface ValueMetadata {
  readonly name: string;
  readonly type: string;
  /** A number for a fixed dimension, a name (possibly '') for a symbolic one. */
  readonly shape: readonly (number | string)[];
}

// The element type numbers of the ONNX TensorProto enum, as the binding reports them.
const typeNames: Record<number, string> = {
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  6: 'int32',
  7: 'int64',
  9: 'bool',
  10: 'float16',
  11: 'float64',
};

let rawModule: RawBindingModule | undefined;
function raw(): RawBindingModule {
  if (!rawModule) {
    try {
      rawModule = createRequire(import.meta.url)('onnxruntime-node/dist/binding.js') as RawBindingModule;
      if (typeof rawModule.binding?.InferenceSession !== 'function')
        throw new Error('binding.InferenceSession is missing');
    } catch (err) {
      throw new ChorusError(
        ErrorCodes.MODEL_LOAD,
        `onnxruntime-node's binding changed shape; update stages/models/SyncSession.ts`,
        { cause: err },
      );
    }
  }
  return rawModule;
}

/** Session options for a stage: intra-op threads from EngineArgs, no inter-op pool, no spinning (cores are shared). */
export function sessionOptions(engine: Pick<EngineArgs, 'threads'>): object {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: Math.max(1, engine.threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
}

function toMetadata(m: RawValueMetadata): ValueMetadata {
  const shape = m.shape.map((d, i) => (d >= 0 ? d : (m.symbolicDimensions[i] ?? '')));
  return { name: m.name, type: m.isTensor ? (typeNames[m.type] ?? `type${m.type}`) : 'non-tensor', shape };
}

export class SyncSession {
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  private closed = false;

  private constructor(
    private readonly session: RawSession,
    /** What this session was loaded from, for error messages. */
    readonly label: string,
  ) {
    this.inputMetadata = session.inputMetadata.map(toMetadata);
    this.outputMetadata = session.outputMetadata.map(toMetadata);
  }

  /** Loads a model from a path or bytes; synchronous, like the run. */
  static create(
    source: string | Uint8Array,
    options: object,
    label = typeof source === 'string' ? source : '<bytes>',
  ): SyncSession {
    onnxTelemetryOff();
    const { binding, initOrt } = raw();
    initOrt();
    const session = new binding.InferenceSession();
    try {
      if (typeof source === 'string') session.loadModel(source, options);
      else session.loadModel(source.buffer, source.byteOffset, source.byteLength, options);
    } catch (err) {
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `cannot load ONNX model ${label}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return new SyncSession(session, label);
  }

  get inputNames(): string[] {
    return this.inputMetadata.map((m) => m.name);
  }

  get outputNames(): string[] {
    return this.outputMetadata.map((m) => m.name);
  }

  /** Runs synchronously; fetches default to every output. */
  run(feeds: Record<string, ort.Tensor>, fetches: readonly string[] = this.outputNames): Record<string, ort.Tensor> {
    if (this.closed) throw new ChorusError(ErrorCodes.INTERNAL, `session ${this.label} is closed`);
    const wanted: Record<string, null> = {};
    for (const name of fetches) wanted[name] = null;
    return this.session.run(feeds, wanted, {});
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.session.dispose();
  }
}
