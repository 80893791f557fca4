/**
 * A realtime session's conversation: ordered message items, rendered to the engine's ChatMessage list.
 * Input audio is validated and kept (counted against the session's byte budget) but contributes only its
 * client-supplied transcript for now: audio encoders are not yet wired to the Thinker.
 */
import { ErrorCodes } from '../../errors.ts';
import type { ChatMessage } from '../../engine/types.ts';
import { decodeBase64Strict } from '../pcm.ts';
import { ClientInputError } from '../validate.ts';
import type { MessageItem } from './clientEvents.ts';
import { newId } from './serverEvents.ts';

export interface StoredPart {
  readonly type: 'input_text' | 'input_audio' | 'text' | 'output_text';
  readonly text: string;
  readonly audio: Buffer | null;
}

export interface StoredItem {
  readonly id: string;
  readonly role: ChatMessage['role'];
  readonly parts: StoredPart[];
}

export interface Budget {
  readonly maxItems: number;
  readonly maxAudioBytes: number;
}

export class Conversation {
  readonly #items: StoredItem[] = [];
  readonly #budget: Budget;
  #audioBytes = 0;

  constructor(budget: Budget) {
    this.#budget = budget;
  }

  get audioBytes(): number {
    return this.#audioBytes;
  }

  get lastItemId(): string | null {
    return this.#items.length === 0 ? null : this.#items[this.#items.length - 1].id;
  }

  /** Validates a client item (ids, roles, audio encoding) without storing it. */
  static toStored(item: MessageItem, param = 'item'): StoredItem {
    const parts = item.content.map((part, i): StoredPart => {
      const where = `${param}.content[${i}]`;
      if (part.type === 'input_audio') {
        if (item.role !== 'user') throw new ClientInputError(`${where}: input_audio is only allowed in user messages`, where);
        const audio = decodeBase64Strict(part.audio ?? '');
        if (audio === null || audio.length === 0 || audio.length % 2 !== 0) {
          throw new ClientInputError(`${where}.audio must be non-empty base64 of pcm16 (24 kHz mono, little-endian)`, `${where}.audio`, ErrorCodes.MEDIA_INVALID);
        }
        return { type: part.type, text: part.transcript ?? '', audio };
      }
      if (part.text === undefined) throw new ClientInputError(`${where}.text is required for ${part.type}`, `${where}.text`);
      return { type: part.type, text: part.text, audio: null };
    });
    return { id: item.id ?? newId('item'), role: item.role, parts };
  }

  /** Inserts after previousItemId ('root' = at the start, absent = at the end). Returns the actual predecessor. */
  insert(item: StoredItem, previousItemId?: string): string | null {
    if (this.#items.length >= this.#budget.maxItems) {
      throw new ClientInputError(`the conversation holds ${this.#items.length} items, this server's limit: start a new session`);
    }
    if (this.#items.some((it) => it.id === item.id)) throw new ClientInputError(`item id ${item.id} already exists`, 'item.id');
    const audioBytes = item.parts.reduce((n, p) => n + (p.audio?.length ?? 0), 0);
    this.reserveAudio(audioBytes);
    let index = this.#items.length;
    if (previousItemId === 'root') index = 0;
    else if (previousItemId !== undefined) {
      const at = this.#items.findIndex((it) => it.id === previousItemId);
      if (at < 0) {
        this.#audioBytes -= audioBytes;
        throw new ClientInputError(`previous_item_id ${previousItemId} is not in the conversation`, 'previous_item_id');
      }
      index = at + 1;
    }
    this.#items.splice(index, 0, item);
    return index === 0 ? null : this.#items[index - 1].id;
  }

  /** Counts audio bytes against the session budget (the input buffer reserves as it grows). */
  reserveAudio(bytes: number): void {
    if (this.#audioBytes + bytes > this.#budget.maxAudioBytes) {
      throw new ClientInputError(
        `input audio would exceed this session's ${this.#budget.maxAudioBytes} bytes: commit less audio or start a new session`,
        null,
        ErrorCodes.REQUEST_TOO_LARGE,
      );
    }
    this.#audioBytes += bytes;
  }

  releaseAudio(bytes: number): void {
    this.#audioBytes = Math.max(0, this.#audioBytes - bytes);
  }

  remove(itemId: string): void {
    const at = this.#items.findIndex((it) => it.id === itemId);
    if (at >= 0) this.#items.splice(at, 1);
  }

  /** Sets the text of an assistant item as it finishes (it was inserted empty when its response started). */
  setText(itemId: string, text: string): void {
    const item = this.#items.find((it) => it.id === itemId);
    if (item) item.parts.splice(0, item.parts.length, { type: 'output_text', text, audio: null });
  }

  items(): readonly StoredItem[] {
    return this.#items;
  }
}

/** Renders items for the engine: instructions first as the system message; empty messages are left out. */
export function toChatMessages(instructions: string, items: readonly StoredItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions.length > 0) messages.push({ role: 'system', content: instructions });
  for (const item of items) {
    const content = item.parts.map((p) => p.text).join('');
    if (content.length > 0) messages.push({ role: item.role, content });
  }
  return messages;
}

/** The item as events show it: audio bytes are never echoed back (as OpenAI does). */
export function storedItemResource(item: StoredItem): Record<string, unknown> {
  return {
    id: item.id,
    object: 'realtime.item',
    type: 'message',
    role: item.role,
    status: 'completed',
    content: item.parts.map((p) =>
      p.type === 'input_audio' ? { type: 'input_audio', transcript: p.text.length > 0 ? p.text : null } : { type: p.type, text: p.text },
    ),
  };
}
