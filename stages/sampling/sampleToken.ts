/**
 * Token sampling: greedy, temperature, top-k, top-p, repetition penalty, OpenAI's frequency and presence
 * penalties and logit bias, banned ids.
 *
 * Randomness is per (seed, position), not a running stream: the draw for the token at position p comes
 * from drawStream(seed, p). So a sequence samples the same tokens alone or in any batch, and after a
 * preemption that recomputes its cache (the stream would otherwise restart at the seed).
 */
import type { SamplingParams } from '../../src/common/samplingParams.ts';
import { Prng } from './Prng.ts';

/** Candidates more than this many nats below the best have probability < e^-30 each: dropped before sorting. */
const NEGLIGIBLE_NATS = 30;

export function drawStream(seed: number, position: number): Prng {
  return new Prng((Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(position + 1, 0x85ebca77)) >>> 0);
}

export function argmax(logits: Float32Array): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i] > bestValue) {
      bestValue = logits[i];
      best = i;
    }
  }
  return best;
}

export interface SampleOptions {
  /** Ids that can never be chosen (end-of-speech under ignore_eos, BOS, ...). */
  readonly banned?: readonly number[];
  /** Ids already in the sequence, for the repetition penalty (HF semantics: divide positive, multiply negative). */
  readonly seen?: Iterable<number>;
  /** Ids generated so far (not the prompt), for the frequency and presence penalties. */
  readonly generated?: readonly number[];
  /**
   * Ids at or above this are never chosen: a model whose logits are wider than its tokenizer's vocabulary
   * (padded embedding tables) must not produce ids the tokenizer cannot decode.
   */
  readonly vocabLimit?: number;
  /**
   * A grammar's mask (src/grammar): token i may be chosen only when bit i & 31 of word i >> 5 is set. Absent for a
   * request without a grammar, which pays nothing for it.
   */
  readonly allowed?: Int32Array;
}

let scratch = new Float32Array(0);

/**
 * Whether sampleToken with these params and no options is the plain argmax of the logits (greedy, no logit bias):
 * then a model's own ArgMax output gives the same id (the first of equal maxima) without the logits.
 */
export function isPlainArgmax(params: SamplingParams): boolean {
  if (params.temperature > 0) return false;
  for (const _ in params.logitBias) return false;
  return true;
}

/** Picks one id from logits (not modified). Greedy when temperature <= 0: the lowest id among equal maxima. */
export function sampleToken(
  logits: Float32Array,
  params: SamplingParams,
  rng: Prng,
  options: SampleOptions = {},
): number {
  if (scratch.length < logits.length) scratch = new Float32Array(logits.length);
  const l = scratch.subarray(0, logits.length);
  l.set(logits);
  for (const id of options.banned ?? []) if (id >= 0 && id < l.length) l[id] = -Infinity;
  if (options.vocabLimit !== undefined && options.vocabLimit < l.length) l.fill(-Infinity, options.vocabLimit);
  if (params.repetitionPenalty !== 1 && options.seen) {
    const p = params.repetitionPenalty;
    for (const id of options.seen) {
      if (id < 0 || id >= l.length) continue;
      l[id] = l[id] > 0 ? l[id] / p : l[id] * p;
    }
  }
  applyOpenAiPenalties(l, params, options.generated);
  if (options.allowed) {
    applyMask(l, options.allowed);
    // Nothing left (the grammar allows only what is banned, e.g. end of text under ignore_eos): the grammar wins.
    if (l[argmax(l)] === -Infinity) return firstAllowed(options.allowed, l.length);
  }
  const best = argmax(l);
  if (!(params.temperature > 0)) return best;

  // Candidates within NEGLIGIBLE_NATS of the best; sorted best first only when top-k/top-p need an order.
  const invT = 1 / params.temperature;
  const floor = l[best] - NEGLIGIBLE_NATS * params.temperature;
  const ids: number[] = [];
  for (let i = 0; i < l.length; i++) if (l[i] >= floor) ids.push(i);
  if (params.topK > 0 || params.topP < 1) ids.sort((a, b) => l[b] - l[a] || a - b);
  let count = ids.length;
  if (params.topK > 0 && params.topK < count) count = params.topK;

  const top = l[best] * invT;
  const weights = new Float64Array(count);
  let total = 0;
  for (let i = 0; i < count; i++) {
    weights[i] = Math.exp(l[ids[i]] * invT - top);
    total += weights[i];
  }
  if (params.topP < 1) {
    // Keep the smallest prefix whose mass reaches topP (always at least one id).
    let mass = 0;
    let keep = 0;
    while (keep < count) {
      mass += weights[keep++] / total;
      if (mass >= params.topP) break;
    }
    count = keep;
    total = 0;
    for (let i = 0; i < count; i++) total += weights[i];
  }
  let u = rng.nextFloat() * total;
  for (let i = 0; i < count; i++) {
    u -= weights[i];
    if (u < 0) return ids[i];
  }
  return ids[count - 1];
}

/** Sets every id the mask does not allow to -Infinity (whole words at a time where a word allows none). */
function applyMask(l: Float32Array, mask: Int32Array): void {
  for (let word = 0; word * 32 < l.length; word++) {
    const bits = word < mask.length ? mask[word] : 0;
    if (bits === -1) continue;
    const end = Math.min(l.length, word * 32 + 32);
    if (bits === 0) {
      l.fill(-Infinity, word * 32, end);
      continue;
    }
    for (let id = word * 32; id < end; id++) if ((bits & (1 << (id & 31))) === 0) l[id] = -Infinity;
  }
}

function firstAllowed(mask: Int32Array, vocabSize: number): number {
  for (let id = 0; id < vocabSize; id++) if ((mask[id >> 5] & (1 << (id & 31))) !== 0) return id;
  return 0;
}

/** frequency_penalty, presence_penalty (over generated ids) and logit_bias, as OpenAI defines them. */
function applyOpenAiPenalties(l: Float32Array, params: SamplingParams, generated: readonly number[] | undefined): void {
  const { frequencyPenalty, presencePenalty, logitBias } = params;
  if ((frequencyPenalty !== 0 || presencePenalty !== 0) && generated && generated.length > 0) {
    const counts = new Map<number, number>();
    for (const id of generated) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, n] of counts) if (id >= 0 && id < l.length) l[id] -= n * frequencyPenalty + presencePenalty;
  }
  for (const key in logitBias) {
    const id = Number(key);
    if (id >= 0 && id < l.length) l[id] += logitBias[key];
  }
}
