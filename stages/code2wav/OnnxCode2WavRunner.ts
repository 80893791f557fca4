/**
 * Code2Wav over onnxruntime-node: codes [B, Q, T] -> audio [B, 1, T * samplesPerFrame]. Items of different
 * lengths share one run by right-padding with code 0: the model is causal, so padding on the right cannot
 * change any earlier sample. Each item's first contextFrames frames are left context and are not returned.
 *
 * A stateful file (Code2WavStates) keeps each request's convolution state between chunks: a request that has
 * state skips its chunk's left context (the state already holds it), so each frame is decoded once. A stateless
 * file (a bring-your-own vocoder, or `streaming_state: false`) decodes the context again with every chunk.
 */
import { basename } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ModelSpec } from '../../src/common/modelSpec.ts';
import type { EngineArgs } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { code2wavReceptiveFieldFrames } from './code2wavModel.ts';
import { signatureError } from '../models/decoderSignature.ts';
import type { ModelFiles } from '../models/ensureModel.ts';
import { generatedSizeOf } from '../models/modelCache.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import type { Code2WavItem, Code2WavRunner } from '../types.ts';
import { Code2WavStates } from './Code2WavStates.ts';
import { checkStateCarries, probeCode2Wav } from './probeCode2Wav.ts';
import { WARMUP_SEQ, warmUp } from '../models/warmUp.ts';

const DEFAULT_SAMPLE_RATE_HZ = 24000;

export class OnnxCode2WavRunner implements Code2WavRunner {
  private decodedFrames = 0;

  private constructor(
    private readonly session: SyncSession,
    private readonly states: Code2WavStates | null,
    readonly numCodebooks: number,
    private readonly codebookSize: number,
    readonly samplesPerFrame: number,
    readonly sampleRateHz: number,
    readonly receptiveFieldFrames: number,
  ) {}

  static load(files: ModelFiles, spec: ModelSpec, engine: Pick<EngineArgs, 'threads'>): OnnxCode2WavRunner {
    const path = spec.source === 'file' ? files.files.model : files.files['code2wav.onnx'];
    const session = SyncSession.create(path, sessionOptions(engine));
    try {
      const what = `code2wav model ${basename(path)}`;
      const codes = session.inputMetadata.find((m) => m.name === 'codes');
      const numCodebooks = codes?.shape[1];
      if (!codes || codes.type !== 'int64' || typeof numCodebooks !== 'number') {
        throw signatureError(
          what,
          'needs a codes input [batch, numCodebooks, frames] (int64) with a fixed numCodebooks',
        );
      }
      if (!session.outputNames.includes('audio'))
        throw signatureError(what, 'needs an audio output [batch, 1, samples]');
      const states = Code2WavStates.detect(session.inputMetadata, session.outputNames, what);
      const size = generatedSizeOf('code2wav', spec, files);
      // A foreign file: measure what the config cannot tell (the probe finds samples per frame and the
      // causal receptive field; without a manifest the codebook size is unknown and left to the model).
      const probed = size
        ? null
        : probeCode2Wav(
            (codes, frames) => runOnce(session, states, codes, [1, numCodebooks, frames], [frames], [null]),
            numCodebooks,
            what,
          );
      const runner = size
        ? new OnnxCode2WavRunner(
            session,
            states,
            numCodebooks,
            size.codebookSize,
            size.samplesPerFrame,
            size.sampleRateHz,
            code2wavReceptiveFieldFrames(size),
          )
        : new OnnxCode2WavRunner(
            session,
            states,
            numCodebooks,
            Number.MAX_SAFE_INTEGER,
            probed!.samplesPerFrame,
            DEFAULT_SAMPLE_RATE_HZ,
            probed!.receptiveFieldFrames,
          );
      warmUp(what, () => {
        runner.warm();
        if (states) checkStateCarries(runner, what);
      });
      runner.decodedFrames = 0;
      return runner;
    } catch (err) {
      session.close();
      throw err;
    }
  }

  get stateful(): boolean {
    return this.states !== null;
  }

  get framesDecoded(): number {
    return this.decodedFrames;
  }

  get numStates(): number {
    return this.states?.size ?? 0;
  }

  warm(): void {
    const decoded = this.decodedFrames; // frames of no request: not counted (framesDecoded)
    this.decode([{ seqId: WARMUP_SEQ, codes: new Int32Array(2 * this.numCodebooks), numFrames: 2, contextFrames: 0 }]);
    this.free(WARMUP_SEQ);
    this.decodedFrames = decoded;
  }

  decode(items: readonly Code2WavItem[]): Float32Array[] {
    const q = this.numCodebooks;
    const spf = this.samplesPerFrame;
    for (const item of items) this.check(item);
    if (this.states && new Set(items.map((i) => i.seqId)).size < items.length)
      throw new ChorusError(ErrorCodes.INTERNAL, 'a stateful code2wav decode got two chunks of one request');
    // A request with state starts after its left context (the state holds it); otherwise from frame 0.
    const skipOf = (item: Code2WavItem) => (this.states?.has(item.seqId) ? item.contextFrames : 0);
    const live = items.filter((item) => item.numFrames > skipOf(item));
    if (live.length === 0) return items.map(() => new Float32Array(0));
    const skips = live.map(skipOf);
    const fed = live.map((item, b) => item.numFrames - skips[b]);
    const maxFrames = Math.max(...fed);
    const codes = new BigInt64Array(live.length * q * maxFrames); // zeros: right padding
    live.forEach((item, b) => {
      for (let book = 0; book < q; book++) {
        const dst = (b * q + book) * maxFrames;
        const src = book * item.numFrames + skips[b];
        for (let t = 0; t < fed[b]; t++) codes[dst + t] = BigInt(item.codes[src + t]);
      }
    });
    const seqIds = live.map((item) => item.seqId);
    const audio = runOnce(this.session, this.states, codes, [live.length, q, maxFrames], fed, seqIds);
    const perItem = maxFrames * spf;
    if (audio.length !== live.length * perItem) {
      throw new ChorusError(
        ErrorCodes.INTERNAL,
        `code2wav returned ${audio.length} samples for ${live.length} x ${maxFrames} frames of ${spf}`,
      );
    }
    for (const n of fed) this.decodedFrames += n;
    return items.map((item) => {
      const b = live.indexOf(item);
      if (b < 0) return new Float32Array(0);
      const base = b * perItem;
      return audio.slice(base + (item.contextFrames - skips[b]) * spf, base + fed[b] * spf);
    });
  }

  free(seqId: string): void {
    this.states?.free(seqId);
  }

  private check(item: Code2WavItem): void {
    const q = this.numCodebooks;
    if (item.codes.length !== q * item.numFrames) {
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `${item.seqId}: ${item.codes.length} codes for ${item.numFrames} frames of ${q} codebooks`,
      );
    }
    if (!(item.contextFrames >= 0 && item.contextFrames <= item.numFrames)) {
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `${item.seqId}: contextFrames ${item.contextFrames} not in [0, ${item.numFrames}]`,
      );
    }
    for (const code of item.codes) {
      if (code < 0 || code >= this.codebookSize) {
        throw new ChorusError(
          ErrorCodes.REQUEST_INVALID,
          `${item.seqId}: code ${code} outside the codebook [0, ${this.codebookSize})`,
        );
      }
    }
  }

  async close(): Promise<void> {
    this.session.close();
  }
}

/**
 * One run of codes [batch, Q, frames]; with states, rows seqIds (null: no state kept) feed their pasts and keep
 * their presents, numFrames[b] real frames each. Returns the audio samples.
 */
function runOnce(
  session: SyncSession,
  states: Code2WavStates | null,
  codes: BigInt64Array,
  dims: readonly [batch: number, numCodebooks: number, frames: number],
  numFrames: readonly number[],
  seqIds: readonly (string | null)[],
): Float32Array {
  const feeds = { codes: new ort.Tensor('int64', codes, [...dims]), ...states?.feeds(seqIds, numFrames) };
  const out = session.run(feeds, ['audio', ...(states?.outputNames ?? [])]);
  states?.keep(seqIds, out);
  return out.audio.data as Float32Array;
}
