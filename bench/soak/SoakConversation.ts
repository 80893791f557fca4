/**
 * One long Realtime conversation of `chorus soak --turns`: session.truncation "auto" and audio answers of a few
 * tokens. A turn adds the user's message (conversation.item.create), waits for the server to hold it, then asks for
 * the answer in the conversation (response.create) and waits for its response.done. It records what the checks
 * need and nothing more (no transcript, no audio: the soak's own memory stays flat over hundreds of turns):
 * outcome, TTFP, and the items the server dropped for this answer (conversation.item.deleted after the last
 * answer's response.done and before this one's response.created, docs/conversations.md), so the turns right after a
 * truncation can be told apart.
 */
import type { RealtimeEvent } from '../ttfp/clients/realtimeEvents.ts';
import { isErrorFor, RealtimeSession } from '../ttfp/clients/RealtimeSession.ts';

const TURN_TIMEOUT_MS = 120_000; // a turn of a few tokens takes well under a second; this is for a hung server

export interface SoakTurn {
  readonly session: number;
  /** 1-based turn index within its session. */
  readonly turn: number;
  /** completed | incomplete (both answered) | failed | cancelled | refused | closed | timeout */
  readonly status: string;
  readonly code: string | null;
  /** response.create to the first audio delta. */
  readonly ttfpMs: number | null;
  /** response.create to response.done. */
  readonly e2eMs: number;
  /** conversation.item.deleted events this answer's truncation sent. */
  readonly deletedItems: number;
  readonly inputTokens: number | null;
  readonly cachedTokens: number | null;
}

export class SoakConversation {
  #turns = 0;

  private constructor(
    private readonly rt: RealtimeSession,
    readonly session: number,
  ) {}

  /** Opens the session: audio answers of at most `maxTokens` text tokens, truncation "auto". */
  static async open(baseUrl: string, session: number, maxTokens: number): Promise<SoakConversation> {
    const rt = await RealtimeSession.open({ baseUrl, apiKey: null });
    await rt
      .update({ output_modalities: ['audio'], max_output_tokens: maxTokens, truncation: 'auto' }, TURN_TIMEOUT_MS)
      .catch((err: Error) => {
        throw new Error(`session ${session}: ${err.message}`, { cause: err });
      });
    return new SoakConversation(rt, session);
  }

  async turn(text: string): Promise<SoakTurn> {
    const turn = ++this.#turns;
    const deadlineMs = performance.now() + TURN_TIMEOUT_MS;
    const itemEventId = `soak_${turn}_item`;
    const responseEventId = `soak_${turn}_response`;
    let startMs = performance.now();
    let ttfpMs: number | null = null;
    let deletedItems = 0;
    const end = (status: string, code: string | null, usage?: RealtimeEvent['response']): SoakTurn => ({
      session: this.session,
      turn,
      status,
      code,
      ttfpMs,
      e2eMs: performance.now() - startMs,
      deletedItems,
      inputTokens: usage?.usage?.input_tokens ?? null,
      cachedTokens: usage?.usage?.input_token_details?.cached_tokens ?? null,
    });

    // 1. The user's message joins the conversation (or is refused, naming our event).
    this.rt.send({
      type: 'conversation.item.create',
      event_id: itemEventId,
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    // Deletions sent since the last answer's response.done are this answer's truncation too: the server makes the
    // next turn's truncation between turns when it can (src/server/realtime/TruncationAhead.ts).
    const held = await this.rt.until(deadlineMs, (e) => {
      if (e.type === 'conversation.item.deleted') deletedItems++;
      return (e.type === 'conversation.item.done' && e.item?.role === 'user') || isErrorFor(e, itemEventId);
    });
    if (typeof held === 'string') return end(held, null);
    if (held.e.type === 'error') return end('refused', held.e.error?.code ?? null);

    // 2. The answer. Deletions before its response.created are this answer's truncation.
    startMs = performance.now();
    this.rt.send({ type: 'response.create', event_id: responseEventId, response: { seed: turn } });
    let responseId: string | undefined;
    for (;;) {
      const got = await this.rt.next(deadlineMs);
      if (typeof got === 'string') return end(got, null);
      const { e, atMs } = got;
      if (responseId === undefined) {
        if (e.type === 'conversation.item.deleted') deletedItems++;
        else if (e.type === 'response.created') responseId = e.response?.id;
        // A refused create gets no response.done: the error naming it ends the turn.
        else if (isErrorFor(e, responseEventId)) return end('refused', e.error?.code ?? null);
        continue;
      }
      if (e.type === 'response.output_audio.delta') ttfpMs ??= atMs - startMs;
      else if (e.type === 'response.done' && e.response?.id === responseId) {
        return end(e.response.status ?? 'failed', e.response.status_details?.error?.code ?? null, e.response);
      }
    }
  }

  close(): void {
    void this.rt.close();
  }
}
