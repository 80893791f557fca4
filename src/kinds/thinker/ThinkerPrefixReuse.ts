/**
 * The Thinker's side of prompt-prefix reuse (voice turns: src/server/realtime/VoicePrefill.ts), per request: a
 * request naming a key takes what the store holds (or waits for the request computing it), adopts the KV of the
 * positions whose inputs match once they can be compared, and a prefill-only request leaves its KV (and its rows,
 * for a Talker) under the key when its prompt is computed. The store itself is ThinkerPrefixes; this moves KV
 * between sequences through the runner and holds requests at position 0 until their match is settled.
 */
import type { ThinkerRunner } from '../../../stages/types.ts';
import type { Thinker2Talker } from '../../../stages/processors/thinker2talker.ts';
import type { Logger } from '../../common/log.ts';
import type { PrefixStats } from '../../worker/messages.ts';
import type { ThinkerMedia } from './ThinkerMedia.ts';
import { matchPrefix, ThinkerPrefixes, type PromptInputs, type RetainedPrefix } from './ThinkerPrefixes.ts';

/** A request's part in prefix reuse (AddRequest.prefix). */
export interface PrefixUse {
  readonly key: string;
  readonly prefillOnly: boolean;
  /** Taken from the store; adopted (or freed) once the match is settled. */
  candidate: RetainedPrefix | null;
  /** Another request is computing the key's prefix now: wait for it. */
  awaiting: boolean;
  /** Positions adopted, and the retained prefix they came from (given back if the request is cancelled). */
  cachedTokens: number;
  adopted: RetainedPrefix | null;
  /** Prefill-only with a Talker-capable model: each prompt position's [embedding, hidden state], as computed. */
  readonly embeds: Float32Array | null;
  readonly hidden: Float32Array | null;
}

/** What of a Thinker request prefix reuse reads. */
export interface PrefixRequest {
  readonly requestId: string;
  readonly promptTokenIds: readonly number[];
  readonly toTalker: Thinker2Talker | null;
  readonly media: ThinkerMedia | null;
  readonly prefix: PrefixUse | null;
}

export interface PrefixReuseHost {
  readonly runner: Pick<ThinkerRunner, 'free' | 'moveSequence' | 'kvBytes' | 'hiddenSize' | 'supports'>;
  /** The scheduler starts the request at position n (its first n positions' KV were adopted). */
  startAt(requestId: string, n: number): void;
  requests(): Iterable<PrefixRequest>;
  /** Recomputes what the request may run now (it may have been waiting for a key's producer). */
  refreshAvailable(req: PrefixRequest): void;
  readonly log: Logger;
}

function inputsOf(req: PrefixRequest): PromptInputs {
  return { tokenIds: req.promptTokenIds, mediaRow: (p) => req.media?.rowAt(p) };
}

export class ThinkerPrefixReuse {
  private readonly store: ThinkerPrefixes;
  private retainedSeq = 0;

  constructor(
    budgetBytes: number,
    private readonly host: PrefixReuseHost,
  ) {
    this.store = new ThinkerPrefixes(budgetBytes, (seqId) => host.runner.free(seqId));
  }

  get stats(): PrefixStats {
    return this.store.stats;
  }

  /** Takes what the key holds (or waits for the request computing it); a prefill-only request becomes its producer. */
  claim(requestId: string, key: string, prefillOnly: boolean, promptLength: number): PrefixUse {
    const { runner } = this.host;
    const candidate = this.store.take(key);
    const awaiting = !candidate && this.store.isProducing(key, requestId);
    if (prefillOnly) this.store.producing(key, requestId);
    const keepRows = prefillOnly && runner.supports?.hiddenStates !== false && runner.supports?.embeddings !== false;
    const d = runner.hiddenSize;
    return {
      key,
      prefillOnly,
      candidate,
      awaiting,
      cachedTokens: 0,
      adopted: null,
      embeds: keepRows ? new Float32Array(promptLength * d) : null,
      hidden: keepRows ? new Float32Array(promptLength * d) : null,
    };
  }

  /**
   * Settles a request's candidate prefix once its inputs can be compared as far as they go: adopts the KV of the
   * matching positions (the scheduler starts it there) or frees it. True while the request must stay at 0.
   */
  held(req: PrefixRequest): boolean {
    const p = req.prefix;
    if (!p) return false;
    if (p.awaiting) return true;
    const c = p.candidate;
    if (!c) return false;
    const { runner } = this.host;
    // At least the last prompt position is computed here: it samples the first token.
    const match = matchPrefix(c.inputs, inputsOf(req), req.promptTokenIds.length - 1);
    if (!match.settled) return true; // stopped at rows still encoding, which the request would wait for anyway
    p.candidate = null;
    // The reused positions' rows are not computed again: a Talker (or a prefill keeping rows) takes them from c.
    const needsRows = req.toTalker !== null || p.embeds !== null;
    if (match.length === 0 || (needsRows && !(c.embeds && c.hidden))) {
      runner.free(c.seqId);
      return false;
    }
    const n = match.length;
    runner.moveSequence(c.seqId, req.requestId, n);
    this.host.startAt(req.requestId, n);
    const d = runner.hiddenSize;
    if (needsRows) {
      const embeds = c.embeds!.subarray(0, n * d);
      const hidden = c.hidden!.subarray(0, n * d);
      req.toTalker?.onStep(0, n, embeds, hidden, null);
      p.embeds?.set(embeds);
      p.hidden?.set(hidden);
    }
    p.cachedTokens = n;
    p.adopted = c;
    this.store.reused(n);
    this.host.log.debug({ requestId: req.requestId, key: p.key, positions: n }, 'prompt prefix reused');
    return false;
  }

  /** A prefill-only request computed its prompt: its KV (and rows) are retained under its key. */
  retain(req: PrefixRequest): void {
    const p = req.prefix!;
    const media = req.media;
    const inputs = { tokenIds: [...req.promptTokenIds], mediaRow: (pos: number) => media?.rowAt(pos) };
    this.retainAs(req, inputs, req.promptTokenIds.length, p.embeds, p.hidden);
    this.wakeAwaiting(p.key);
  }

  /**
   * A cancelled answer gives back the prefix it took, so a speculative voice answer the user spoke over
   * (src/server/realtime/HeldAnswer.ts) costs the turn none of what was prefilled: the positions it adopted keep
   * their KV (later positions only appended to it), under the key again, unless the key holds something newer.
   * Call before the request's state is freed.
   */
  onAbort(req: PrefixRequest): void {
    const p = req.prefix;
    if (!p || p.prefillOnly || this.store.has(p.key)) return;
    if (p.candidate) {
      this.store.retain(p.candidate, req.requestId); // not settled yet: untouched
      p.candidate = null;
    } else if (p.adopted && p.cachedTokens > 0) {
      const [from, n, d] = [p.adopted, p.cachedTokens, this.host.runner.hiddenSize];
      const inputs = {
        tokenIds: from.inputs.tokenIds.slice(0, n),
        mediaRow: (pos: number) => from.inputs.mediaRow(pos),
      };
      this.retainAs(req, inputs, n, from.embeds?.subarray(0, n * d) ?? null, from.hidden?.subarray(0, n * d) ?? null);
    }
    this.wakeAwaiting(p.key);
  }

  /** The request ended: a candidate it never settled is freed; a producer that gave up wakes its waiters. */
  onFree(req: PrefixRequest): void {
    const p = req.prefix;
    if (!p) return;
    if (p.candidate) this.host.runner.free(p.candidate.seqId);
    p.candidate = null;
    if (p.prefillOnly) {
      this.store.abandon(p.key, req.requestId);
      this.wakeAwaiting(p.key);
    }
  }

  release(key: string): void {
    this.store.release(key);
  }

  /** Moves the request's first `length` positions of KV (and their rows) under its prefix key. */
  private retainAs(
    req: PrefixRequest,
    inputs: RetainedPrefix['inputs'],
    length: number,
    embeds: Float32Array | null,
    hidden: Float32Array | null,
  ): void {
    const { runner } = this.host;
    const key = req.prefix!.key;
    const seqId = `prefix ${key} ${this.retainedSeq++}`; // a space: never a request id
    runner.moveSequence(req.requestId, seqId, length);
    const rowBytes = (embeds?.byteLength ?? 0) + (hidden?.byteLength ?? 0);
    const bytes = runner.kvBytes(seqId) + rowBytes;
    this.store.retain({ key, seqId, inputs, length, embeds, hidden, bytes }, req.requestId);
  }

  /** The key's producer retained or gave up: requests waiting for it take what is there now. */
  private wakeAwaiting(key: string): void {
    for (const r of this.host.requests()) {
      const p = r.prefix;
      if (p?.key !== key || !p.awaiting) continue;
      p.candidate = this.store.take(key);
      p.awaiting = !p.candidate && this.store.isProducing(key, r.requestId);
      this.host.refreshAvailable(r);
    }
  }
}
