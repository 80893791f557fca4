/**
 * What the stage cores (src/worker) need from the model layer. Runners only execute; schedulers decide
 * what runs (vLLM v1's split). A runner keeps per-sequence state (KV cache, sampler RNG, last frame)
 * keyed by seqId until free(seqId).
 */
import type { EngineArgs } from '../src/common/graph.ts';
import type { SamplingParams } from '../src/common/samplingParams.ts';
import type { TokenLogprobs } from '../src/common/payloads.ts';

/**
 * The engine arguments runners read: threads for every session; max_num_seqs sizes a Thinker's or Talker's KV pool
 * (stages/models/KvBufferPool.ts), one row when absent.
 */
export type RunnerEngine = Pick<EngineArgs, 'threads'> & Partial<Pick<EngineArgs, 'maxNumSeqs'>>;

export type { SamplingParams };

// ---------------------------------------------------------------------------------------------- Thinker

export interface ThinkerBatchItem {
  readonly seqId: string;
  /** The new positions this step: token ids, or (for spliced media) rows of inputs_embeds. */
  readonly tokenIds?: readonly number[];
  /** numTokens * hiddenSize floats, row-major. When given, tokenIds is ignored for the embedding. */
  readonly inputsEmbeds?: Float32Array;
  readonly numTokens: number;
  /** True when this step reaches the end of the known input, so a token is sampled from its last position. */
  readonly sample: boolean;
  readonly sampling: SamplingParams;
  /** The tokens this sequence has generated so far (for the frequency and presence penalties). */
  readonly generated?: readonly number[];
  /** The request's grammar mask for the token sampled this step (src/grammar); absent without a grammar. */
  readonly allowedTokens?: Int32Array;
  /** The request asked for logprobs: the sampled token's and this many top alternatives' (0-20). */
  readonly logprobs?: number;
}

export interface ThinkerStepOutput {
  readonly seqId: string;
  /** The sampled token (when item.sample). */
  readonly tokenId: number | null;
  /** The sampled token's logprobs, when item.logprobs asked for them. */
  readonly logprobs?: TokenLogprobs;
  /** numTokens * hiddenSize: the input embedding of each new position. */
  readonly embeds: Float32Array;
  /** numTokens * hiddenSize: the output of the "accept" layer at each new position. */
  readonly hidden: Float32Array;
}

export interface ThinkerRunner {
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly eosTokenId: number;
  /**
   * What a bring-your-own model lacks (absent or all true: everything, as for the generated models).
   * inputsEmbeds false: items with inputsEmbeds are refused. hiddenStates / embeddings false: the
   * `hidden` / `embeds` outputs are empty, so the model cannot condition a Talker (text only).
   */
  readonly supports?: { readonly inputsEmbeds: boolean; readonly hiddenStates: boolean; readonly embeddings: boolean };
  /** Token ids -> input embedding rows (numTokens * hiddenSize), for splicing media and for the Talker. */
  embed(tokenIds: readonly number[]): Float32Array;
  /** One batched forward over the items (each extends its own sequence and KV cache). */
  execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[];
  /**
   * One dummy step of one position, forgotten at once: keeps the weights in the caches while the stage is idle
   * (IdleWarmth.ts). One position and not a prompt's two: as warm for the next prefill, in half the time a request
   * that comes during it waits (bench/NOTES.md, "The keep-warm step of one position").
   */
  warm(): void;
  /** KV cache bytes one position costs (from the model's past_key_values layout: file models too). */
  readonly kvBytesPerToken: number;
  /** Bytes of KV cache held for this sequence now. */
  kvBytes(seqId: string): number;
  free(seqId: string): void;
  /**
   * Hands the KV cache of sequence `from` to sequence `to`, keeping its first `keepPositions` positions (a finished
   * request's KV going into the prefix cache, or a whole entry adopted by a request). `from` is gone afterwards.
   * `fedTokenIds`: the ids fed as tokens at the kept positions (repetition penalty); without it `to` keeps `from`'s.
   */
  moveSequence(from: string, to: string, keepPositions: number, fedTokenIds?: readonly number[]): void;
  /**
   * Gives sequence `to` a copy of the first `keepPositions` positions of `from`'s KV (a request adopting a cached
   * prefix); `from` keeps its own. `fedTokenIds`: the ids fed as tokens at those positions (repetition penalty).
   */
  copySequence(from: string, to: string, keepPositions: number, fedTokenIds: readonly number[]): void;
  close(): Promise<void>;
}

// ----------------------------------------------------------------------------------------------- Talker

export interface TalkerBatchItem {
  readonly seqId: string;
  /** numRows * conditionDim floats: one conditioning row per new position ([thinker embed | accept hidden]). */
  readonly rows: Float32Array;
  readonly numRows: number;
  readonly sampling: SamplingParams;
  /**
   * False for a chunk of a split prefill: the rows extend the cache but no frame is sampled (codes is
   * empty). Default true. Without it, a split prefill would sample a frame the caller drops, which then
   * becomes the "previous frame" of the next position and consumes randomness: results would depend on
   * how the prefill was chunked.
   */
  readonly sample?: boolean;
}

export interface TalkerStepOutput {
  readonly seqId: string;
  /** One frame: numCodebooks codes (codebook 0 from the Talker, 1..15 from the residual code predictor). */
  readonly codes: Int32Array;
  /** Codebook 0 chose end-of-speech (never true when sampling.ignoreEos). */
  readonly eos: boolean;
}

export interface TalkerRunner {
  readonly conditionDim: number;
  readonly numCodebooks: number;
  readonly framesPerToken: number;
  /** The conditioning row used once the Thinker's text has run out (a learned "text pad"). */
  readonly padRow: Float32Array;
  execute(items: readonly TalkerBatchItem[]): TalkerStepOutput[];
  /** One dummy step of one position, forgotten at once: brings the weights back into the caches (IdleWarmth.ts). */
  warm(): void;
  /** KV cache bytes one position costs (from the model's past_key_values layout). */
  readonly kvBytesPerToken: number;
  kvBytes(seqId: string): number;
  free(seqId: string): void;
  /** As ThinkerRunner's: a prompt prefix's KV into the prefix cache, and out of it into a request. */
  moveSequence(from: string, to: string, keepPositions: number): void;
  copySequence(from: string, to: string, keepPositions: number): void;
  close(): Promise<void>;
}

// --------------------------------------------------------------------------------------------- Code2Wav

export interface Code2WavItem {
  readonly seqId: string;
  /** numCodebooks * numFrames codes, layout [Q][T] (the ONNX input is [B, Q, T]). */
  readonly codes: Int32Array;
  readonly numFrames: number;
  /** The first contextFrames frames are left context only: their samples are not returned. */
  readonly contextFrames: number;
}

export interface Code2WavRunner {
  readonly numCodebooks: number;
  readonly samplesPerFrame: number;
  readonly sampleRateHz: number;
  /** Frames of left context that cover the receptive field exactly (streaming == offline when context >= this). */
  readonly receptiveFieldFrames: number;
  /**
   * Keeps each request's convolution state between chunks (a file with state inputs): a request's chunks after
   * its first skip their left context, so each frame is decoded once. At most one chunk per request per decode.
   */
  readonly stateful: boolean;
  /** One batched decode; returns (numFrames - contextFrames) * samplesPerFrame samples per item. */
  decode(items: readonly Code2WavItem[]): Float32Array[];
  /** One dummy decode, forgotten at once: brings the weights back into the caches (IdleWarmth.ts). */
  warm(): void;
  /** Frames run through the model since load (left context re-decoded included, batch padding not). */
  readonly framesDecoded: number;
  /** Requests holding state (0 for a stateless runner). */
  readonly numStates: number;
  /** Drops a request's state (finish, fail, abort); a no-op for a request without state. */
  free(seqId: string): void;
  close(): Promise<void>;
}
