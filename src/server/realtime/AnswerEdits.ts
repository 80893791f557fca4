/**
 * What becomes of a Realtime session's items once the answers are said: the client's truncations
 * (conversation.item.truncate, or its playback acks applied when the next turn begins), its deletions, and the items
 * session.truncation leaves out or whose media the encoder could not decode, each removed and the client told. It
 * keeps what each answer voiced (SpokenItems) to cut an item's text to what was heard.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Engine } from '../../common/engine.ts';
import { ErrorCodes, type SerializedError } from '../../common/errors.ts';
import { leadingItem } from '../media/itemNames.ts';
import { ClientInputError } from '../validate.ts';
import type { ClientEventOf } from './clientEvents.ts';
import type { Conversation } from './Conversation.ts';
import type { ResponseStream, SpokenText } from './ResponseStream.ts';
import { newId } from './serverEvents.ts';
import type { SocketWriter } from './SocketWriter.ts';
import { SpokenItems } from './SpokenItems.ts';

export interface AnswerEditsParts {
  readonly sessionId: string;
  readonly writer: SocketWriter;
  readonly conversation: Conversation;
  /** Read at each cut (what the pipeline's audio output is follows the engine's current graph). */
  readonly engine: Pick<Engine, 'audioOutput'>;
  readonly log: FastifyBaseLogger;
  /** The response running, or finished with its response.done not yet out (SessionResponses.active). */
  readonly active: () => ResponseStream | null;
}

export class AnswerEdits {
  readonly #p: AnswerEditsParts;
  /** Assistant audio items: what was said (truncate maps played audio onto it); truncations of a live response. */
  readonly #spoken = new SpokenItems();
  /** output_audio.playback_ack: how much of each answer's audio the client says it has played (ms). */
  readonly #played = new Map<string, number>();

  constructor(parts: AnswerEditsParts) {
    this.#p = parts;
  }

  /** An answer's response.done is out: the text its item keeps (cut to what was heard if it was truncated). */
  finished(itemId: string, text: string, spoken: SpokenText | null): string {
    return this.#spoken.finished(itemId, text, spoken);
  }

  /**
   * Items session.truncation dropped: forgotten as conversation.item.delete forgets them (later responses do not
   * read them, their media leaves the session's budget), and the client told the same way, one
   * conversation.item.deleted each (OpenAI documents no event for truncation).
   */
  forget(itemIds: readonly string[]): void {
    if (itemIds.length === 0) return;
    for (const itemId of itemIds) {
      if (!this.#p.conversation.remove(itemId)) continue;
      this.#spoken.forget(itemId);
      this.#played.delete(itemId);
      this.#p.writer.send({ type: 'conversation.item.deleted', event_id: newId('event'), item_id: itemId });
    }
    this.#p.log.debug({ sessionId: this.#p.sessionId, items: itemIds.length }, 'conversation truncated');
  }

  /**
   * Media that passed the header checks but failed to decode in the encoder fails its response, naming the item.
   * Left in the conversation it would fail every later response too, so it is removed, and the client told.
   */
  dropUndecodableItem(failure: SerializedError | null, itemIds: readonly (string | null)[]): void {
    if (failure?.code !== ErrorCodes.MEDIA_INVALID) return;
    const at = leadingItem(failure.message);
    const itemId = at ? itemIds[at.message] : null;
    if (!itemId || !this.#p.conversation.remove(itemId)) return;
    this.#p.log.debug({ sessionId: this.#p.sessionId, itemId }, 'removed an item whose media cannot be decoded');
    this.#p.writer.send({ type: 'conversation.item.deleted', event_id: newId('event'), item_id: itemId });
  }

  /**
   * conversation.item.truncate: the client played `audio_end_ms` of an assistant item's audio. The item's text
   * becomes what that audio voiced, so the next turn's context holds only what the user heard; a response still
   * running for it is cancelled.
   */
  truncate(event: ClientEventOf<'conversation.item.truncate'>): void {
    this.#played.delete(event.item_id); // the client's own cut wins over its acks
    this.#truncate(event);
  }

  #truncate(event: { item_id: string; content_index: number; audio_end_ms: number }): void {
    // Still the active response (running, or finished with its response.done not yet out): its finish records
    // the cut text instead of the whole answer.
    const live = this.#p.active()?.itemId === event.item_id ? this.#p.active() : null;
    const text = this.#spoken.truncate(event, live?.spoken ?? null, this.#p.engine.audioOutput);
    if (!live) this.#p.conversation.setText(event.item_id, text, true);
    else if (!live.finished) live.cancel();
    this.#p.writer.send({
      type: 'conversation.item.truncated',
      event_id: newId('event'),
      item_id: event.item_id,
      content_index: 0,
      audio_end_ms: event.audio_end_ms,
    });
  }

  /**
   * conversation.item.delete: the item leaves the conversation (later responses do not see it) and frees its media.
   * The item a response is still writing cannot go: the client cancels the response first.
   */
  deleteItem(event: ClientEventOf<'conversation.item.delete'>): void {
    const active = this.#p.active();
    if (active?.itemId === event.item_id) {
      throw new ClientInputError(
        `item ${event.item_id} is the answer of response ${active.id}, still in progress: cancel the response ` +
          `(response.cancel) and delete the item after its response.done`,
        'item_id',
        ErrorCodes.RESPONSE_ACTIVE,
      );
    }
    this.#p.conversation.require(event.item_id);
    this.#p.conversation.remove(event.item_id);
    this.#spoken.forget(event.item_id);
    this.#played.delete(event.item_id);
    this.#p.writer.send({ type: 'conversation.item.deleted', event_id: newId('event'), item_id: event.item_id });
  }

  /**
   * output_audio.playback_ack (Chorus extension): the client has played `played_ms` of an answer's audio. Acks only
   * record (no event answers one); settlePlayback applies them when the next turn begins.
   */
  playbackAck(event: ClientEventOf<'output_audio.playback_ack'>): void {
    const live = this.#p.active()?.itemId === event.item_id ? this.#p.active() : null;
    this.#spoken.checkPlayed(event.item_id, event.played_ms, live?.spoken ?? null);
    this.#played.set(event.item_id, Math.max(this.#played.get(event.item_id) ?? 0, event.played_ms));
  }

  /**
   * A new turn begins (response.create, or speech starting): an answer whose playback the client acked short of its
   * end was cut off, so its item keeps only what was heard, as a conversation.item.truncate at the last ack would
   * (with its conversation.item.truncated). An answer still running is settled at the turn after it finishes.
   */
  settlePlayback(): void {
    for (const [itemId, playedMs] of this.#played) {
      if (this.#p.active()?.itemId === itemId) continue;
      this.#played.delete(itemId);
      const audioMs = this.#spoken.audioMs(itemId);
      if (audioMs !== null && playedMs < Math.floor(audioMs))
        this.#truncate({ item_id: itemId, content_index: 0, audio_end_ms: playedMs });
    }
  }
}
