/**
 * A Realtime conversation: one WebSocket session per conversation; each turn adds the user's message
 * (conversation.item.create, input_text), then, once the server holds it, asks for an answer in the conversation
 * (response.create: audio, max_output_tokens with ignore_eos, the turn's seed) and waits for its response.done.
 *
 * The clock of a turn starts at response.create: the item's round trip is not part of the answer's latency. How a
 * turn fails or is refused: RealtimeSession.answer.
 */
import { chunkingFields, type ClientTarget } from '../clients/BenchClient.ts';
import { errorText, isErrorFor, RealtimeSession } from '../clients/RealtimeSession.ts';
import type { RequestTrace } from '../trace.ts';
import type { ConversationClient, TurnRequest } from './ConversationClient.ts';

export class RealtimeConversation implements ConversationClient {
  #turns = 0;

  private constructor(private readonly session: RealtimeSession) {}

  /**
   * `system`: the session's instructions, set (and confirmed by session.updated) before the first turn. The session
   * may fill the Thinker's whole context (retention_ratio 0.5 over it, where "auto" keeps a window of
   * realtime.auto_truncation_positions, docs/conversations.md): the bench measures answers as the history grows.
   */
  static async connect(target: ClientTarget, system: string | null = null): Promise<RealtimeConversation> {
    const session = await RealtimeSession.open(target);
    const truncation = { type: 'retention_ratio', retention_ratio: 0.5 };
    await session
      .update({ type: 'realtime', truncation, ...(system === null ? {} : { instructions: system }) })
      .catch((err: Error) => {
        throw new Error(`the bench's session.update: ${err.message}`, { cause: err });
      });
    return new RealtimeConversation(session);
  }

  async turn(r: TurnRequest): Promise<RequestTrace> {
    const n = ++this.#turns;
    const deadlineMs = performance.now() + r.timeoutMs;
    const failed = (error: string): RequestTrace => ({ startMs: performance.now(), events: [], ok: false, error });
    const itemEventId = `bench_turn_${n}_item`;
    const responseEventId = `bench_turn_${n}_response`;

    // 1. The user's message joins the conversation (or is refused, naming our event).
    const item = { type: 'message', role: 'user', content: [{ type: 'input_text', text: r.prompt }] };
    if (!this.session.send({ type: 'conversation.item.create', event_id: itemEventId, item }))
      return failed('the realtime socket is closed');
    // Only ours is a user item: earlier turns' events (the answers' items) are passed over.
    const held = await this.session.until(
      deadlineMs,
      (e) => (e.type === 'conversation.item.done' && e.item?.role === 'user') || isErrorFor(e, itemEventId),
    );
    if (held === 'closed') return failed('the server closed the realtime socket');
    if (held === 'timeout') return failed(`no conversation.item.done within ${r.timeoutMs} ms`);
    if (held.e.type === 'error') return failed(`conversation.item.create refused: ${errorText(held.e)}`);

    // 2. The answer, in the conversation.
    const startMs = performance.now();
    this.session.send({
      type: 'response.create',
      event_id: responseEventId,
      response: {
        output_modalities: ['audio'],
        max_output_tokens: r.outputLen,
        ignore_eos: true,
        seed: r.seed,
        ...chunkingFields(r),
      },
    });
    return this.session.answer(responseEventId, startMs, deadlineMs, r.timeoutMs);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
