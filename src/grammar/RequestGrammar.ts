/**
 * One request's grammar state: the mask of the tokens it allows next, advanced by every token the request accepts.
 * Its state is a function of the tokens accepted, so a replay that accepts the same tokens is in the same state
 * (migration replays, preemption recomputes: nothing else is kept).
 */
import { SyncMatcher, type XgCompiledGrammar } from './xgrammar.ts';

export class RequestGrammar {
  /** Reused each step: ceil(vocabSize / 32) words, bit i & 31 of word i >> 5 set when token i is allowed. */
  private readonly bits: Int32Array;

  private constructor(private readonly matcher: SyncMatcher) {
    this.bits = new Int32Array(Math.ceil(matcher.vocabSize / 32));
  }

  static async create(compiled: XgCompiledGrammar, vocabSize: number): Promise<RequestGrammar> {
    return new RequestGrammar(await SyncMatcher.create(compiled, vocabSize));
  }

  /** The tokens allowed next (valid until the next call). */
  mask(): Int32Array {
    this.matcher.fillMask(this.bits);
    return this.bits;
  }

  /**
   * Advances over a sampled token; false when the grammar does not allow it (a sampler that ignored the mask: the
   * caller fails the request rather than emit text outside the grammar).
   */
  accept(tokenId: number): boolean {
    return this.matcher.accept(tokenId);
  }

  /** The grammar accepted a stop token: the answer is complete. */
  get terminated(): boolean {
    return this.matcher.terminated;
  }

  dispose(): void {
    this.matcher.dispose();
  }
}

/** Whether token `id` is allowed by a mask (tokens past the mask's end are not). */
export function allowedBy(mask: Int32Array, id: number): boolean {
  const word = id >> 5;
  return word < mask.length && (mask[word] & (1 << (id & 31))) !== 0;
}
