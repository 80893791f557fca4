/**
 * The Thinker over onnxruntime-node: one KV cache per sequence, batched steps (items grouped by numTokens,
 * the past left-padded inside a group), sampling per sequence with (seed, position) randomness.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ModelSpec } from '../../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { logger } from '../../src/common/log.ts';
import type { ModelFiles } from '../models/ensureModel.ts';
import { KvDecoder } from '../models/KvDecoder.ts';
import { KvDecoderRunner } from '../models/KvDecoderRunner.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import { THINKER_EOS_TOKEN_ID } from './thinkerVocab.ts';
import { drawStream, sampleToken } from '../sampling/sampleToken.ts';
import { tokenLogprobs } from '../sampling/logprobs.ts';
import type { TokenLogprobs } from '../../src/common/payloads.ts';
import { createTokenizer } from '../../src/tokenizer/createTokenizer.ts';
import type { RunnerEngine, ThinkerBatchItem, ThinkerRunner, ThinkerStepOutput } from '../types.ts';
import { groupByNumTokens } from '../models/groupByNumTokens.ts';
import { WARMUP_SAMPLING, WARMUP_SEQ, warmUp } from '../models/warmUp.ts';
import { loadTokenEmbedder, type TokenEmbedder } from './TokenEmbedder.ts';
import { readSiblingConfig, readThinkerSignature, type ThinkerSignature } from './thinkerSignature.ts';

const EMPTY = new Float32Array(0);

export class OnnxThinkerRunner extends KvDecoderRunner implements ThinkerRunner {
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly supports: { readonly inputsEmbeds: boolean; readonly hiddenStates: boolean; readonly embeddings: boolean };
  /** Token ids seen per sequence (prompt and fed-back samples), for the repetition penalty. */
  private readonly seen = new Map<string, Set<number>>();
  /** The tokenizer's vocabulary when narrower than the logits (set by load for a bring-your-own model). */
  private vocabLimit: number | undefined;

  private constructor(
    decoder: KvDecoder,
    private readonly signature: ThinkerSignature,
    private readonly embedder: TokenEmbedder | null,
    eosTokenId: number,
  ) {
    super(decoder);
    this.vocabSize = signature.vocabSize;
    this.hiddenSize = signature.hiddenSize ?? embedder?.hiddenSize ?? 0;
    this.eosTokenId = eosTokenId;
    this.supports = {
      inputsEmbeds: signature.inputMode === 'inputs_embeds',
      hiddenStates: signature.hiddenOutput !== null,
      embeddings: embedder !== null,
    };
  }

  static load(files: ModelFiles, spec: ModelSpec, engine: RunnerEngine): OnnxThinkerRunner {
    const options = sessionOptions(engine);
    const generated = spec.source === 'generated' && spec.kind === 'thinker' ? spec : null;
    const decoderPath = generated ? files.files['decoder_model.onnx'] : files.files.model;
    const embedPath = generated ? files.files['embed_tokens.onnx'] : join(files.dir, 'embed_tokens.onnx');
    const session = SyncSession.create(decoderPath, options);
    try {
      const signature = readThinkerSignature(session, decoderPath);
      const embedder = existsSync(embedPath) ? loadTokenEmbedder(embedPath, options) : null;
      const what = `thinker model ${basename(decoderPath)}`;
      if (signature.inputMode === 'inputs_embeds' && !embedder) {
        throw new ChorusError(
          ErrorCodes.MODEL_SIGNATURE,
          `${what} takes inputs_embeds but there is no embed_tokens.onnx beside it: export the embedding too ` +
            `(Optimum multimodal layout) or export a decoder that takes input_ids`,
        );
      }
      const side = generated
        ? { eosTokenId: THINKER_EOS_TOKEN_ID, maxPositions: generated.size.maxPositions }
        : readSiblingConfig(decoderPath);
      const runner = new OnnxThinkerRunner(
        new KvDecoder(session, signature.layout, signature.names, {
          maxPositions: side.maxPositions ?? Number.MAX_SAFE_INTEGER,
          maxNumSeqs: engine.maxNumSeqs ?? 1,
        }),
        signature,
        embedder,
        side.eosTokenId ?? -1,
      );
      runner.warnDegraded(what, side.eosTokenId === null);
      // Exports often pad the embedding (and so the logits) past the tokenizer's vocabulary: never sample there.
      if (spec.source === 'file' && spec.tokenizer !== undefined) {
        const tokenizerVocab = createTokenizer(spec).vocabSize;
        if (tokenizerVocab < runner.vocabSize) runner.vocabLimit = tokenizerVocab;
      }
      warmUp(what, () => {
        const first = runner.execute([
          { seqId: WARMUP_SEQ, tokenIds: [0, 1], numTokens: 2, sample: true, sampling: WARMUP_SAMPLING },
        ]);
        runner.execute([
          { seqId: WARMUP_SEQ, tokenIds: [first[0].tokenId!], numTokens: 1, sample: true, sampling: WARMUP_SAMPLING },
        ]);
        runner.free(WARMUP_SEQ);
      });
      return runner;
    } catch (err) {
      session.close();
      throw err;
    }
  }

  private warnDegraded(what: string, noEos: boolean): void {
    const lost: string[] = [];
    if (!this.supports.inputsEmbeds)
      lost.push('it takes input_ids only, so media inputs (spliced embeddings) are refused');
    if (!this.supports.hiddenStates)
      lost.push(`it has no hidden_states.accept output, so it cannot drive a Talker (text only)`);
    if (!this.supports.embeddings)
      lost.push('there is no embed_tokens.onnx beside it, so no embedding rows for a Talker');
    if (noEos)
      lost.push('no eos_token_id in config.json beside it, so only stop_token_ids and max_tokens end an answer');
    if (lost.length > 0) logger.warn({ model: what }, `${what} loads with reduced features: ${lost.join('; ')}`);
  }

  embed(tokenIds: readonly number[]): Float32Array {
    if (!this.embedder) {
      throw new ChorusError(
        ErrorCodes.MODEL_SIGNATURE,
        'this thinker model has no embed_tokens.onnx, so it cannot give embedding rows: put one beside the decoder',
      );
    }
    return this.embedder.embed(tokenIds);
  }

  warm(): void {
    this.execute([{ seqId: WARMUP_SEQ, tokenIds: [0], numTokens: 1, sample: false, sampling: WARMUP_SAMPLING }]);
    this.free(WARMUP_SEQ);
  }

  execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
    const outputs = new Array<ThinkerStepOutput>(items.length);
    // Split by past length too: a long sequence's decode would pad the short ones' to its length.
    for (const group of groupByNumTokens(items, (seqId) => this.decoder.pastLength(seqId))) {
      const groupOutputs = this.runGroup(group.map((i) => items[i]));
      group.forEach((itemIndex, k) => (outputs[itemIndex] = groupOutputs[k]));
    }
    return outputs;
  }

  private inputRows(item: ThinkerBatchItem): Float32Array {
    if (item.inputsEmbeds) {
      if (!this.supports.inputsEmbeds) {
        throw new ChorusError(
          ErrorCodes.REQUEST_INVALID,
          'this thinker model takes input_ids only: media inputs need a decoder exported with inputs_embeds',
        );
      }
      if (item.inputsEmbeds.length !== item.numTokens * this.hiddenSize) {
        throw new ChorusError(
          ErrorCodes.REQUEST_INVALID,
          `${item.seqId}: inputsEmbeds has ${item.inputsEmbeds.length} floats, expected ${item.numTokens} x ` +
            `${this.hiddenSize}`,
        );
      }
      return item.inputsEmbeds;
    }
    return this.embedder ? this.embedder.embed(this.tokenIdsOf(item)) : EMPTY;
  }

  private tokenIdsOf(item: ThinkerBatchItem): readonly number[] {
    if (!item.tokenIds || item.tokenIds.length !== item.numTokens) {
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `${item.seqId}: needs ${item.numTokens} tokenIds or inputsEmbeds rows`,
      );
    }
    return item.tokenIds;
  }

  /** One forward over items that all add the same number of positions. */
  private runGroup(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
    const batch = items.length;
    const numTokens = items[0].numTokens;
    const d = this.hiddenSize;
    const embeds = items.map((item) => this.inputRows(item));
    const feeds: Record<string, ort.Tensor> = {};
    if (this.signature.inputMode === 'inputs_embeds') {
      const data = new Float32Array(batch * numTokens * d);
      embeds.forEach((rows, b) => data.set(rows, b * numTokens * d));
      feeds.inputs_embeds = new ort.Tensor('float32', data, [batch, numTokens, d]);
    } else {
      const ids = new BigInt64Array(batch * numTokens);
      items.forEach((item, b) => this.tokenIdsOf(item).forEach((id, i) => (ids[b * numTokens + i] = BigInt(id))));
      feeds.input_ids = new ort.Tensor('int64', ids, [batch, numTokens]);
    }
    for (const item of items) {
      if (!item.tokenIds || item.inputsEmbeds) continue;
      let seen = this.seen.get(item.seqId);
      if (!seen) this.seen.set(item.seqId, (seen = new Set()));
      for (const id of item.tokenIds) seen.add(id);
    }
    const fetch = this.signature.hiddenOutput ? ['logits', this.signature.hiddenOutput] : ['logits'];
    const out = this.decoder.run(
      items.map((i) => i.seqId),
      numTokens,
      feeds,
      fetch,
    );
    const logits = out.logits.data as Float32Array;
    const logitRows = out.logits.dims[1]; // 1 (generated: the last position) or numTokens (Optimum exports)
    const hidden = this.signature.hiddenOutput ? (out[this.signature.hiddenOutput].data as Float32Array) : null;
    const v = this.vocabSize;
    return items.map((item, b) => {
      let tokenId: number | null = null;
      let logprobs: TokenLogprobs | undefined;
      if (item.sample) {
        const row = logits.subarray(((b + 1) * logitRows - 1) * v, (b + 1) * logitRows * v);
        const position = this.decoder.pastLength(item.seqId); // the position the sampled token will take
        tokenId = sampleToken(row, item.sampling, drawStream(item.sampling.seed, position), {
          banned: item.sampling.ignoreEos ? [this.eosTokenId] : undefined,
          seen: this.seen.get(item.seqId),
          ...(item.generated ? { generated: item.generated } : {}),
          ...(this.vocabLimit !== undefined ? { vocabLimit: this.vocabLimit } : {}),
          ...(item.allowedTokens ? { allowed: item.allowedTokens } : {}),
        });
        if (item.logprobs !== undefined) logprobs = tokenLogprobs(row, tokenId, item.logprobs, this.vocabLimit);
      }
      return {
        seqId: item.seqId,
        tokenId,
        ...(logprobs ? { logprobs } : {}),
        embeds: embeds[b],
        hidden: hidden ? hidden.slice(b * numTokens * d, (b + 1) * numTokens * d) : EMPTY,
      };
    });
  }

  protected forget(seqId: string): void {
    this.seen.delete(seqId);
  }

  moveSequence(from: string, to: string, keepPositions: number, fedTokenIds?: readonly number[]): void {
    this.decoder.move(from, to, keepPositions);
    const seen = fedTokenIds ? new Set(fedTokenIds) : this.seen.get(from);
    this.seen.delete(from);
    if (seen) this.seen.set(to, seen);
    else this.seen.delete(to);
  }

  copySequence(from: string, to: string, keepPositions: number, fedTokenIds: readonly number[]): void {
    this.decoder.copy(from, to, keepPositions);
    this.seen.set(to, new Set(fedTokenIds));
  }

  async close(): Promise<void> {
    this.decoder.session.close();
    this.embedder?.close();
  }
}
