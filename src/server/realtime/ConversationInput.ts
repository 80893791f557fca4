/**
 * What the client puts into a Realtime session's conversation: the items it creates (conversation.item.create) and
 * the turns committed from its input audio buffer, each checked, inserted and announced (conversation.item.added,
 * then .done), then heard as its transcript (HeardTurns) or transcribed beside the answer (input transcription);
 * and the items it reads back (conversation.item.retrieve). RealtimeSession decides when (the dispatch, the VAD's
 * commits, camera frames, the voice prefill); this does what each one does to the conversation.
 */
import type { MediaPart } from '../media/mediaParts.ts';
import { checkNewItem } from './checkNewItem.ts';
import type { ClientEventOf } from './clientEvents.ts';
import { Conversation, INPUT_AUDIO_RATE_HZ, storedItemResource, type StoredItem } from './Conversation.ts';
import type { HeardTurns } from './HeardTurns.ts';
import type { InputTranscription } from './InputTranscription.ts';
import { newId, type SessionState } from './serverEvents.ts';
import type { ResponseContext, SessionResponses } from './SessionResponses.ts';
import type { SocketWriter } from './SocketWriter.ts';
import type { TranscriptionSetting } from './transcriptionSetting.ts';

export interface ConversationInputParts {
  /** Read at each item (the token limits and media checks follow the engine's current graph). */
  readonly ctx: Pick<ResponseContext, 'media' | 'tokenLimits' | 'options'>;
  readonly writer: SocketWriter;
  readonly state: SessionState;
  readonly conversation: Conversation;
  readonly responses: SessionResponses;
  readonly transcription: InputTranscription;
  /** The pipeline hears speech as its transcript; null: it hears the audio. */
  readonly heard: HeardTurns | null;
  /** The session has closed: no transcription starts any more. */
  readonly closed: () => boolean;
}

export class ConversationInput {
  readonly #p: ConversationInputParts;

  constructor(parts: ConversationInputParts) {
    this.#p = parts;
  }

  /** conversation.item.create: the item as stored, once it is in the conversation and announced. */
  create(event: ClientEventOf<'conversation.item.create'>): StoredItem {
    const { ctx, conversation, heard, state } = this.#p;
    const item = Conversation.toStored(event.item, ctx.media);
    const limits = { tokenLimits: ctx.tokenLimits, maxTextBytes: ctx.options.maxConversationTextBytes };
    checkNewItem(item, conversation.items(), limits);
    const previous = conversation.insert(item, event.previous_item_id);
    this.#announce(item, previous);
    heard?.hear(item, state.transcription);
    return item;
  }

  /** The input audio buffer's `media`, taken for a commit, becomes user item `itemId`. */
  commitAudio(media: MediaPart, itemId: string): void {
    const { ctx, conversation, heard, state, writer } = this.#p;
    ctx.media.check(media, 'input_audio_buffer (audio)');
    const item: StoredItem = {
      id: itemId,
      role: 'user',
      parts: [{ type: 'input_audio', text: '', media, heard: heard !== null }],
    };
    const previous = conversation.insert(item);
    writer.send({
      type: 'input_audio_buffer.committed',
      event_id: newId('event'),
      previous_item_id: previous,
      item_id: item.id,
    });
    this.#announce(item, previous);
    if (heard) heard.hear(item, state.transcription);
    else if (state.transcription) this.#transcribeBeside(item.id, media, state.transcription);
  }

  /** The item as the server holds it, media included (the audio a turn was committed with, after VAD clipping). */
  retrieve(event: ClientEventOf<'conversation.item.retrieve'>): void {
    const item = this.#p.conversation.require(event.item_id);
    // The answer's text joins its item when its response.done is out: until then it is in progress.
    const inProgress = this.#p.responses.active?.itemId === item.id;
    this.#p.writer.send({
      type: 'conversation.item.retrieved',
      event_id: newId('event'),
      item: storedItemResource(item, { withMedia: true, inProgress }),
    });
  }

  #announce(item: StoredItem, previousItemId: string | null): void {
    const resource = storedItemResource(item);
    for (const type of ['conversation.item.added', 'conversation.item.done'] as const)
      this.#p.writer.send({ type, event_id: newId('event'), previous_item_id: previousItemId, item: resource });
  }

  /**
   * Input transcription of a turn the Thinker hears itself: started once the turn's answer (created right after the
   * commit, by the VAD or the client) has its first audio out, so it never competes with that for the CPU.
   */
  #transcribeBeside(itemId: string, media: MediaPart, setting: TranscriptionSetting): void {
    const seconds = media.data.byteLength / 2 / INPUT_AUDIO_RATE_HZ;
    void Promise.resolve()
      .then(() => this.#p.responses.afterFirstAudio())
      .then(() => {
        if (!this.#p.closed()) void this.#p.transcription.start(itemId, media, setting, seconds);
      });
  }
}
