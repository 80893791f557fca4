/**
 * The Thinker's text to main, a few tokens a message. A message per token woke main (at stage_nice levels above the
 * stages) once a token: with the other core busy with the Talker, main took the Thinker's core for each one, and a
 * spoken answer's decode step cost 0.75 ms of wall time after its model against 0.25 in a sync run (bench/NOTES.md,
 * "Text to main a few tokens at a time"). So after an answer's first token (sent at once: its TTFT) tokens wait for
 * TEXT_DELTA_TOKENS of them, at most TEXT_DELTA_MAX_MS, and whatever waits goes when the request stops being stepped
 * (held for its first audio, or the stage idle) and with its final chunk. Main and the clients take a text delta of
 * several tokens as they take one.
 */
import type { TextBody, TokenLogprobs } from '../../src/common/payloads.ts';

/** Tokens a text message to main carries at most, after the answer's first. */
export const TEXT_DELTA_TOKENS = 4;

/** The longest a token waits for the others of its message (ms). */
export const TEXT_DELTA_MAX_MS = 10;

interface Pending {
  readonly tokenIds: number[];
  readonly logprobs: TokenLogprobs[];
  readonly sinceMs: number;
}

export interface TextDelta {
  readonly tokenIds: readonly number[];
  /** One per token id, for a request that asked for logprobs; else empty. */
  readonly logprobs: readonly TokenLogprobs[];
}

/** A delta as main's text chunk: its tokens, and their logprobs when the request asked for them. */
export function textBody(delta: TextDelta): TextBody {
  return { kind: 'text', tokenIds: delta.tokenIds, ...(delta.logprobs.length > 0 ? { logprobs: delta.logprobs } : {}) };
}

export class TextDeltas {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly send: (requestId: string, delta: TextDelta) => void) {}

  /** A token for main: sent with those waiting when `now` says so (the first token, a hold) or the delta is full. */
  push(requestId: string, token: number, logprobs: TokenLogprobs | undefined, now: boolean, nowMs: number): void {
    let p = this.pending.get(requestId);
    if (!p) {
      p = { tokenIds: [], logprobs: [], sinceMs: nowMs };
      this.pending.set(requestId, p);
    }
    p.tokenIds.push(token);
    if (logprobs) p.logprobs.push(logprobs);
    if (now || p.tokenIds.length >= TEXT_DELTA_TOKENS) this.sendOne(requestId);
  }

  /** What waits for the request, taken (for its final chunk); empty when nothing does. */
  take(requestId: string): TextDelta {
    const p = this.pending.get(requestId);
    this.pending.delete(requestId);
    return p ?? { tokenIds: [], logprobs: [] };
  }

  /** The request's final delta, taken: what waits for it, then its last token (null: the answer ended without one). */
  final(requestId: string, token: number | null, logprobs: TokenLogprobs | undefined): TextDelta {
    const p = this.take(requestId);
    if (token === null) return p;
    return { tokenIds: [...p.tokenIds, token], logprobs: logprobs ? [...p.logprobs, logprobs] : p.logprobs };
  }

  /** Sends what waits for the request, if anything. */
  sendOne(requestId: string): void {
    const p = this.take(requestId);
    if (p.tokenIds.length > 0) this.send(requestId, p);
  }

  /** Sends every delta whose first token came before `cutoffMs` (Infinity: every one). */
  sendOlderThan(cutoffMs: number): void {
    for (const [requestId, p] of [...this.pending]) if (p.sinceMs < cutoffMs) this.sendOne(requestId);
  }

  /** Forgets what waits for the request (it ended without a final chunk to main: aborted). */
  drop(requestId: string): void {
    this.pending.delete(requestId);
  }
}
