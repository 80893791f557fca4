/**
 * Retained prompt prefixes of the Thinker (voice turns: src/server/realtime/VoicePrefill.ts). A prefill-only
 * request computes the conversation and the speech heard so far, and its KV cache is kept here under the
 * session's key instead of being freed; the next request with that key (the next prefill, or the answer once the
 * user stops speaking) takes it and starts from the longest prefix whose inputs are the same as its own.
 *
 * "The same" is checked, never assumed: position by position the token ids must be equal and, at media
 * positions, the rows must be equal bit for bit (the encoder's window cache hands out the very floats it gave
 * before: stages/encoders/AudioWindows.ts). So reuse cannot change an answer whatever the session did in
 * between (an edited conversation, other instructions, a clip that grew): it only shortens the prefill.
 *
 * Pure bookkeeping, no model: the core moves KV with runner.moveSequence and frees it through `free`.
 */
import type { PrefixStats } from '../../worker/messages.ts';

/** What fills each position of a prompt. */
export interface PromptInputs {
  readonly tokenIds: readonly number[];
  /** The row of media position p (null: its rows have not arrived); undefined when p is a text position. */
  mediaRow(p: number): Float32Array | null | undefined;
}

export interface PrefixMatch {
  /** Positions [0, length) have the same inputs in both. */
  readonly length: number;
  /** False: the walk stopped at a media position of `incoming` whose rows have not arrived (it may go further). */
  readonly settled: boolean;
}

function sameRow(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** The longest common prefix of inputs, at most `limit` positions. */
export function matchPrefix(retained: PromptInputs, incoming: PromptInputs, limit: number): PrefixMatch {
  const end = Math.min(limit, retained.tokenIds.length, incoming.tokenIds.length);
  for (let p = 0; p < end; p++) {
    if (retained.tokenIds[p] !== incoming.tokenIds[p]) return { length: p, settled: true };
    const theirs = incoming.mediaRow(p);
    if (theirs === null) return { length: p, settled: false };
    const ours = retained.mediaRow(p);
    if (ours === undefined && theirs === undefined) continue;
    if (!ours || !theirs || !sameRow(ours, theirs)) return { length: p, settled: true };
  }
  return { length: end, settled: true };
}

export interface RetainedPrefix {
  readonly key: string;
  /** The runner sequence holding its KV. */
  readonly seqId: string;
  readonly inputs: PromptInputs;
  /** Positions computed (and held in KV). */
  readonly length: number;
  /**
   * Each position's input embedding and hidden state ([length][hidden] each), which a Talker needs for the prompt
   * positions a reusing request does not compute; null when the model has no hidden states.
   */
  readonly embeds: Float32Array | null;
  readonly hidden: Float32Array | null;
  readonly bytes: number;
}

export class ThinkerPrefixes {
  readonly #entries = new Map<string, RetainedPrefix>();
  /** key -> the prefill-only request computing it now. */
  readonly #producers = new Map<string, string>();
  #bytes = 0;
  #reuses = 0;
  #reusedTokens = 0;

  constructor(
    /** Retained KV beyond this is freed, oldest first (it sits outside the scheduler's KV budget). */
    private readonly budgetBytes: number,
    private readonly free: (seqId: string) => void,
  ) {}

  /** A prefill-only request for `key` was admitted: requests that want the key wait for its result. */
  producing(key: string, requestId: string): void {
    this.#producers.set(key, requestId);
  }

  /** Whether a prefill-only request other than `requestId` is computing `key` now. */
  isProducing(key: string, requestId: string): boolean {
    const producer = this.#producers.get(key);
    return producer !== undefined && producer !== requestId;
  }

  /** The producer ended without a result (aborted, failed): nothing will come under `key` from it. */
  abandon(key: string, requestId: string): void {
    if (this.#producers.get(key) === requestId) this.#producers.delete(key);
  }

  /** A producer's result: replaces what `key` held (freed); the oldest others go while over budget. */
  retain(entry: RetainedPrefix, requestId: string): void {
    this.abandon(entry.key, requestId);
    this.release(entry.key);
    this.#entries.set(entry.key, entry);
    this.#bytes += entry.bytes;
    for (const old of this.#entries.values()) {
      if (this.#bytes <= this.budgetBytes || old === entry) break;
      this.release(old.key);
    }
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** Takes the prefix under `key` (it is no longer held here: the taker adopts or frees its KV). */
  take(key: string): RetainedPrefix | null {
    const entry = this.#entries.get(key);
    if (!entry) return null;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
    return entry;
  }

  /** Frees what `key` holds (the session ended, the turn was dropped). */
  release(key: string): void {
    const entry = this.take(key);
    if (entry) this.free(entry.seqId);
  }

  /** A request started `positions` in. */
  reused(positions: number): void {
    this.#reuses++;
    this.#reusedTokens += positions;
  }

  get stats(): PrefixStats {
    return {
      retained: this.#entries.size,
      retainedBytes: this.#bytes,
      reuses: this.#reuses,
      reusedTokens: this.#reusedTokens,
    };
  }
}
