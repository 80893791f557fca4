/**
 * The Talker over onnxruntime-node: one frame of numCodebooks codes per sampling step. Codebook 0 comes
 * from the AR decoder, codebooks 1..Q-1 from the residual code predictor given the decoder's last hidden
 * state and code 0. The input at position p is the conditioning row plus an embedding of the frame
 * sampled at position p - 1, or BOS when p - 1 sampled nothing (prompt positions, a split prefill).
 * free() drops the frame history with the cache: a sequence recomputed after a preemption restarts with
 * BOS as its previous frame, so its later frames can differ from an uninterrupted run (greedy text is
 * unaffected; only the audio of a preempted request).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ModelSpec } from '../../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ModelFiles } from '../models/ensureModel.ts';
import { generatedSizeOf } from '../models/modelCache.ts';
import { groupByNumTokens } from '../models/groupByNumTokens.ts';
import { WARMUP_SAMPLING, WARMUP_SEQ, warmUp } from '../models/warmUp.ts';
import { KvDecoder } from '../models/KvDecoder.ts';
import { KvDecoderRunner } from '../models/KvDecoderRunner.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import { drawStream, isPlainArgmax, sampleToken } from '../sampling/sampleToken.ts';
import type { RunnerEngine, TalkerBatchItem, TalkerRunner, TalkerStepOutput } from '../types.ts';
import { readTalkerSignature, type TalkerSignature } from './talkerSignature.ts';

interface TalkerSeqState {
  lastFrame: Int32Array | null;
  lastFramePosition: number;
  seenCode0: Set<number>;
}

const EMPTY_CODES = new Int32Array(0);
const DEFAULT_FRAMES_PER_TOKEN = 2;

export class OnnxTalkerRunner extends KvDecoderRunner implements TalkerRunner {
  readonly conditionDim: number;
  readonly numCodebooks: number;
  readonly framesPerToken: number;
  readonly padRow: Float32Array;
  private readonly bos: number;
  private readonly eos: number;
  private readonly states = new Map<string, TalkerSeqState>();

  private constructor(
    decoder: KvDecoder,
    private readonly predictor: SyncSession,
    private readonly signature: TalkerSignature,
    padRow: Float32Array,
    framesPerToken: number,
  ) {
    super(decoder);
    this.conditionDim = signature.conditionDim;
    this.numCodebooks = signature.numCodebooks;
    this.framesPerToken = framesPerToken;
    this.padRow = padRow;
    this.bos = signature.codebookSize;
    this.eos = signature.codebookSize + 1;
  }

  static load(files: ModelFiles, spec: ModelSpec, engine: RunnerEngine): OnnxTalkerRunner {
    const options = sessionOptions(engine);
    const talkerPath = spec.source === 'file' ? files.files.model : files.files['talker.onnx'];
    const predictorPath = join(files.dir, 'code_predictor.onnx');
    if (!existsSync(predictorPath)) {
      throw new ChorusError(
        ErrorCodes.MODEL_SIGNATURE,
        `talker model ${talkerPath} needs code_predictor.onnx beside it (residual codebooks)`,
      );
    }
    const talker = SyncSession.create(talkerPath, options);
    let predictor: SyncSession | null = null;
    try {
      predictor = SyncSession.create(predictorPath, options);
      const signature = readTalkerSignature(talker, predictor, talkerPath);
      const size = generatedSizeOf('talker', spec, files);
      const padPath = join(files.dir, 'pad_row.f32');
      const padRow = existsSync(padPath)
        ? new Float32Array(new Uint8Array(readFileSync(padPath)).buffer)
        : new Float32Array(signature.conditionDim);
      if (padRow.length !== signature.conditionDim) {
        throw new ChorusError(
          ErrorCodes.MODEL_SIGNATURE,
          `${padPath} holds ${padRow.length} floats, the talker's conditionDim is ${signature.conditionDim}`,
        );
      }
      const decoder = new KvDecoder(talker, signature.layout, signature.names, {
        maxPositions: size?.maxPositions ?? Number.MAX_SAFE_INTEGER,
        maxNumSeqs: engine.maxNumSeqs ?? 1,
      });
      const runner = new OnnxTalkerRunner(
        decoder,
        predictor,
        signature,
        padRow,
        size?.framesPerToken ?? DEFAULT_FRAMES_PER_TOKEN,
      );
      warmUp(`talker model ${talkerPath}`, () => {
        const rows = new Float32Array(2 * signature.conditionDim);
        runner.execute([{ seqId: WARMUP_SEQ, rows, numRows: 2, sampling: WARMUP_SAMPLING }]);
        runner.execute([
          { seqId: WARMUP_SEQ, rows: rows.subarray(signature.conditionDim), numRows: 1, sampling: WARMUP_SAMPLING },
        ]);
        runner.free(WARMUP_SEQ);
      });
      return runner;
    } catch (err) {
      talker.close();
      predictor?.close();
      throw err;
    }
  }

  warm(): void {
    this.execute([{ seqId: WARMUP_SEQ, rows: this.padRow, numRows: 1, sampling: WARMUP_SAMPLING }]);
    this.free(WARMUP_SEQ);
  }

  execute(items: readonly TalkerBatchItem[]): TalkerStepOutput[] {
    const outputs = new Array<TalkerStepOutput>(items.length);
    // Split by past length too: a long prompt's frames (a clip's rows) would pad the short ones' past to its length.
    const steps = items.map((i) => ({ seqId: i.seqId, numTokens: i.numRows }));
    for (const group of groupByNumTokens(steps, (seqId) => this.decoder.pastLength(seqId))) {
      const groupOutputs = this.runGroup(group.map((i) => items[i]));
      group.forEach((itemIndex, k) => (outputs[itemIndex] = groupOutputs[k]));
    }
    return outputs;
  }

  private stateOf(seqId: string): TalkerSeqState {
    let s = this.states.get(seqId);
    if (!s) this.states.set(seqId, (s = { lastFrame: null, lastFramePosition: -1, seenCode0: new Set() }));
    return s;
  }

  private runGroup(items: readonly TalkerBatchItem[]): TalkerStepOutput[] {
    const batch = items.length;
    const numRows = items[0].numRows;
    const { conditionDim: c, numCodebooks: q } = this;
    const condition = new Float32Array(batch * numRows * c);
    const prevCodes = new BigInt64Array(batch * numRows * q).fill(BigInt(this.bos));
    items.forEach((item, b) => {
      if (item.rows.length !== numRows * c) {
        throw new ChorusError(
          ErrorCodes.REQUEST_INVALID,
          `${item.seqId}: ${item.rows.length} condition floats, expected ${numRows} x ${c}`,
        );
      }
      condition.set(item.rows, b * numRows * c);
      const state = this.stateOf(item.seqId);
      if (state.lastFrame && state.lastFramePosition === this.decoder.pastLength(item.seqId) - 1) {
        state.lastFrame.forEach((code, k) => (prevCodes[b * numRows * q + k] = BigInt(code)));
      }
    });
    const feeds = {
      condition: new ort.Tensor('float32', condition, [batch, numRows, c]),
      prev_codes: new ort.Tensor('int64', prevCodes, [batch, numRows, q]),
    };
    const out = this.decoder.run(
      items.map((i) => i.seqId),
      numRows,
      feeds,
      ['logits', 'last_hidden_state'],
    );
    const logits = out.logits.data as Float32Array;
    const hidden = out.last_hidden_state.data as Float32Array;
    // Rows per item: 1 (generated: the last position) or numRows (files that give every position).
    const rows = { logits: out.logits.dims[1], hidden: out.last_hidden_state.dims[1] };
    const vocab = this.signature.codebookSize + 2;
    const d = this.signature.hiddenSize;

    const results: TalkerStepOutput[] = items.map((item) => ({ seqId: item.seqId, codes: EMPTY_CODES, eos: false }));
    const speaking: { b: number; code0: number; rng: ReturnType<typeof drawStream> }[] = [];
    items.forEach((item, b) => {
      if (item.sample === false) return;
      const last = (b + 1) * rows.logits - 1;
      const position = this.decoder.pastLength(item.seqId) - 1; // the position this frame is sampled from
      const rng = drawStream(item.sampling.seed, position);
      const state = this.stateOf(item.seqId);
      const code0 = sampleToken(logits.subarray(last * vocab, (last + 1) * vocab), item.sampling, rng, {
        banned: item.sampling.ignoreEos ? [this.bos, this.eos] : [this.bos],
        seen: state.seenCode0,
      });
      if (code0 === this.eos) {
        results[b] = { seqId: item.seqId, codes: new Int32Array(q), eos: true };
        return;
      }
      state.seenCode0.add(code0);
      speaking.push({ b, code0, rng });
    });
    if (speaking.length > 0) this.predictResidual(items, speaking, hidden, rows.hidden, d, results);
    return results;
  }

  /** Codebooks 1..Q-1 for the items that sampled a code 0, in one predictor run. */
  private predictResidual(
    items: readonly TalkerBatchItem[],
    speaking: readonly { b: number; code0: number; rng: ReturnType<typeof drawStream> }[],
    hidden: Float32Array,
    /** Hidden rows per item in `hidden`: its last is the one the predictor reads. */
    hiddenRows: number,
    d: number,
    results: TalkerStepOutput[],
  ): void {
    const n = speaking.length;
    const q = this.numCodebooks;
    const k = this.signature.codebookSize;
    const lastHidden = new Float32Array(n * d);
    speaking.forEach(({ b }, i) => {
      const last = (b + 1) * hiddenRows - 1;
      lastHidden.set(hidden.subarray(last * d, (last + 1) * d), i * d);
    });
    const code0 = BigInt64Array.from(speaking, (s) => BigInt(s.code0));
    // Greedy residuals come straight from the graph's ArgMax: [n, Q-1] ids instead of [n, Q-1, K] logits copied
    // out, scanned and collected every step.
    const greedy = this.signature.greedyCodes && speaking.every(({ b }) => isPlainArgmax(items[b].sampling));
    const out = this.predictor.run(
      { hidden: new ort.Tensor('float32', lastHidden, [n, d]), code0: new ort.Tensor('int64', code0, [n]) },
      [greedy ? 'greedy_codes' : 'logits'],
    );
    const ids = greedy ? (out.greedy_codes.data as BigInt64Array) : null;
    const logits = greedy ? null : (out.logits.data as Float32Array);
    speaking.forEach(({ b, code0: c0, rng }, i) => {
      const item = items[b];
      const codes = new Int32Array(q);
      codes[0] = c0;
      for (let book = 1; book < q; book++) {
        const at = i * (q - 1) + book - 1;
        codes[book] = ids ? Number(ids[at]) : sampleToken(logits!.subarray(at * k, (at + 1) * k), item.sampling, rng);
      }
      const state = this.stateOf(item.seqId);
      state.lastFrame = codes;
      state.lastFramePosition = this.decoder.pastLength(item.seqId) - 1;
      results[b] = { seqId: item.seqId, codes, eos: false };
    });
  }

  protected forget(seqId: string): void {
    this.states.delete(seqId);
  }

  // Prompt positions only (cached before any frame was sampled): no sampler state goes with them.
  moveSequence(from: string, to: string, keepPositions: number): void {
    this.decoder.move(from, to, keepPositions);
    this.states.delete(from);
    this.states.delete(to);
  }

  copySequence(from: string, to: string, keepPositions: number): void {
    this.decoder.copy(from, to, keepPositions);
    this.states.delete(to);
  }

  async close(): Promise<void> {
    this.decoder.session.close();
    this.predictor.close();
  }
}
