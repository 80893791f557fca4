/**
 * A realtime session's conversation: ordered message items, rendered to the engine's ChatMessage list.
 * Input audio (pcm16 at 24 kHz, or a WAV) and images (data: URLs) are checked when their item is created
 * (MediaChecker: the pipeline has an encoder for them, their headers are sound), kept against the session's
 * byte budget, and go to the engine as audio / image parts with every response that sees the item: the
 * encoder cache makes the repeats cheap. A client-supplied transcript is echoed, not sent to the model (the
 * audio itself is). On a pipeline that hears speech through its speech-to-text (MediaChecker.heard), an audio part
 * goes to the Thinker as the transcript the server made of it (HeardTurns), and without one it is left out.
 */
import { ErrorCodes } from '../../common/errors.ts';
import { sniffImageFormat } from '../../media/image.ts';
import type { ChatMessage, ContentPart } from '../../common/engine.ts';
import type { ItemNamer } from '../media/itemNames.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import { realtimeImagePart, type MediaPart } from '../media/mediaParts.ts';
import { decodeBase64Strict } from '../pcm.ts';
import { ClientInputError } from '../validate.ts';
import type { ContentPart as ClientPart, ConversationItem } from './clientEvents.ts';
import type { EchoedContent, StoredItemResource } from './ItemResource.ts';
import { newId } from './serverEvents.ts';

/** The Realtime API's input audio: pcm16, mono, little-endian, 24 kHz. */
export const INPUT_AUDIO_RATE_HZ = 24000;

export interface StoredPart {
  /** The client's content types; and output_audio, an answer spoken (its item keeps the transcript). */
  readonly type: 'input_text' | 'input_audio' | 'input_image' | 'text' | 'output_text' | 'output_audio';
  /** The text, input_audio's client-supplied transcript, or output_audio's transcript. */
  readonly text: string;
  readonly media: MediaPart | null;
  /** The Thinker gets `text` (the server's transcript of `media`), not the audio: MediaChecker.heard. */
  readonly heard?: boolean;
}

/** A function_call item (a call the model made) or a function_call_output (its result, from the client). */
export type CallData =
  | {
      readonly type: 'function_call';
      readonly callId: string;
      readonly name: string;
      arguments: string;
      status: 'in_progress' | 'completed' | 'incomplete';
    }
  | { readonly type: 'function_call_output'; readonly callId: string; readonly output: string };

export interface StoredItem {
  readonly id: string;
  /** A call is the assistant's, its output the user's side (rendered as a tool turn). */
  readonly role: Exclude<ChatMessage['role'], 'tool'>;
  readonly parts: StoredPart[];
  /** Set on function_call and function_call_output items (whose parts are empty). */
  readonly call?: CallData;
  /** The Thinker positions the item takes, counted under `graph` (PromptPositions); cleared when its text changes. */
  positions?: { readonly graph: object; readonly count: number };
}

export interface Budget {
  readonly maxItems: number;
  /** Input media bytes (the audio buffer, and the audio and images of items). */
  readonly maxMediaBytes: number;
}

function mediaBytes(item: StoredItem): number {
  return item.parts.reduce((n, p) => n + (p.media?.data.byteLength ?? 0), 0);
}

export class Conversation {
  readonly #items: StoredItem[] = [];
  readonly #budget: Budget;
  #mediaBytes = 0;

  constructor(budget: Budget) {
    this.#budget = budget;
  }

  get mediaBytes(): number {
    return this.#mediaBytes;
  }

  get lastItemId(): string | null {
    return this.#items.length === 0 ? null : this.#items[this.#items.length - 1].id;
  }

  /** Validates a client item (ids, roles, media encodings and headers) without storing it. */
  static toStored(item: ConversationItem, media: MediaChecker, param = 'item'): StoredItem {
    if (item.type === 'function_call') {
      const call: CallData = {
        type: 'function_call',
        callId: item.call_id,
        name: item.name,
        arguments: item.arguments,
        status: item.status ?? 'completed',
      };
      return { id: item.id ?? newId('item'), role: 'assistant', parts: [], call };
    }
    if (item.type === 'function_call_output') {
      const call = { type: item.type, callId: item.call_id, output: item.output } as const;
      return { id: item.id ?? newId('item'), role: 'user', parts: [], call };
    }
    const parts = item.content.map((part, i) => storedPart(part, item.role, `${param}.content[${i}]`, media));
    return { id: item.id ?? newId('item'), role: item.role, parts };
  }

  /** Inserts after previousItemId ('root' = at the start, absent = at the end). Returns the actual predecessor. */
  insert(item: StoredItem, previousItemId?: string): string | null {
    if (this.#items.length >= this.#budget.maxItems) {
      throw new ClientInputError(
        `the conversation holds ${this.#items.length} items, this server's limit: delete items it no longer ` +
          `needs (conversation.item.delete) or start a new session`,
      );
    }
    if (this.#items.some((it) => it.id === item.id))
      throw new ClientInputError(`item id ${item.id} already exists`, 'item.id');
    const bytes = mediaBytes(item);
    this.reserveMedia(bytes);
    let index = this.#items.length;
    if (previousItemId === 'root') index = 0;
    else if (previousItemId !== undefined) {
      const at = this.#items.findIndex((it) => it.id === previousItemId);
      if (at < 0) {
        this.#mediaBytes -= bytes;
        throw new ClientInputError(`previous_item_id ${previousItemId} is not in the conversation`, 'previous_item_id');
      }
      index = at + 1;
    }
    this.#items.splice(index, 0, item);
    return index === 0 ? null : this.#items[index - 1].id;
  }

  /** Counts media bytes against the session budget (the input audio buffer reserves as it grows). */
  reserveMedia(bytes: number): void {
    if (this.#mediaBytes + bytes > this.#budget.maxMediaBytes) {
      throw new ClientInputError(
        `input media would exceed this session's ${this.#budget.maxMediaBytes} bytes: send less audio or fewer ` +
          `images, or start a new session`,
        null,
        ErrorCodes.REQUEST_TOO_LARGE,
      );
    }
    this.#mediaBytes += bytes;
  }

  releaseMedia(bytes: number): void {
    this.#mediaBytes = Math.max(0, this.#mediaBytes - bytes);
  }

  /** Removes an item (and frees its media). Returns whether it was there. */
  remove(itemId: string): boolean {
    const at = this.#items.findIndex((it) => it.id === itemId);
    if (at < 0) return false;
    this.releaseMedia(mediaBytes(this.#items[at]));
    this.#items.splice(at, 1);
    return true;
  }

  get(itemId: string): StoredItem | undefined {
    return this.#items.find((it) => it.id === itemId);
  }

  /** The item, or the error a client event naming an item that is not there gets. */
  require(itemId: string): StoredItem {
    const item = this.get(itemId);
    if (!item) throw new ClientInputError(`no item ${itemId} in this conversation`, 'item_id', ErrorCodes.NOT_FOUND);
    return item;
  }

  /**
   * Sets the text of an assistant item as it finishes (it was inserted empty when its response started): what it
   * said, or, for a spoken answer, the transcript of its audio.
   */
  setText(itemId: string, text: string, spoken: boolean): void {
    const item = this.get(itemId);
    if (!item) return;
    item.parts.splice(0, item.parts.length, { type: spoken ? 'output_audio' : 'output_text', text, media: null });
    item.positions = undefined;
  }

  /** Sets the transcript of a heard audio part (HeardTurns); the item may have been deleted meanwhile. */
  setHeard(itemId: string, partIndex: number, transcript: string): void {
    const item = this.get(itemId);
    const part = item?.parts[partIndex];
    if (!item || !part?.heard) return;
    item.parts[partIndex] = { ...part, text: transcript };
    item.positions = undefined;
  }

  items(): readonly StoredItem[] {
    return this.#items;
  }
}

function storedPart(part: ClientPart, role: StoredItem['role'], where: string, media: MediaChecker): StoredPart {
  if (part.type === 'input_audio' || part.type === 'input_image') {
    if (role !== 'user') throw new ClientInputError(`${where}: ${part.type} is only allowed in user messages`, where);
    const mediaPart = part.type === 'input_audio' ? inputAudio(part, where) : inputImage(part, where);
    media.check(mediaPart, `${where} (${mediaPart.type})`);
    // Heard audio's text is the server's transcript (HeardTurns): a client's is not what the Thinker gets.
    if (media.heard(mediaPart.type)) return { type: part.type, text: '', media: mediaPart, heard: true };
    return { type: part.type, text: part.transcript ?? '', media: mediaPart };
  }
  if (part.text === undefined)
    throw new ClientInputError(`${where}.text is required for ${part.type}`, `${where}.text`);
  return { type: part.type, text: part.text, media: null };
}

function inputAudio(part: ClientPart, where: string): MediaPart {
  const format = part.format ?? 'pcm16';
  const data = decodeBase64Strict(part.audio ?? '');
  if (data === null || data.length === 0) {
    const what = format === 'wav' ? 'a WAV file' : 'pcm16 (24 kHz mono, little-endian)';
    throw new ClientInputError(
      `${where}.audio must be non-empty base64 of ${what}`,
      `${where}.audio`,
      ErrorCodes.MEDIA_INVALID,
    );
  }
  return format === 'wav'
    ? { type: 'audio', data, format }
    : { type: 'audio', data, format, sampleRateHz: INPUT_AUDIO_RATE_HZ };
}

function inputImage(part: ClientPart, where: string): MediaPart {
  if (part.image_url === undefined) {
    throw new ClientInputError(
      `${where}.image_url is required for input_image (a data: URL, data:image/png;base64,...)`,
      `${where}.image_url`,
    );
  }
  return realtimeImagePart(part.image_url, `${where} (image)`);
}

export interface RenderedConversation {
  readonly messages: ChatMessage[];
  /** Engine message index -> the item it came from (null: the instructions). */
  readonly itemIds: readonly (string | null)[];
  /** Names media items in the engine's errors and warnings by item id. */
  readonly itemNamer: ItemNamer;
}

/**
 * Renders items for the engine: instructions first as the system message; empty messages are left out. An item
 * without media stays one string, exactly the prompt it gave before media existed; with media it is parts, one
 * per stored part (so the engine's part index is the item's).
 */
export function toChatMessages(instructions: string, items: readonly StoredItem[]): RenderedConversation {
  const messages: ChatMessage[] = [];
  const itemIds: (string | null)[] = [];
  if (instructions.length > 0) {
    messages.push({ role: 'system', content: instructions });
    itemIds.push(null);
  }
  for (const item of items) {
    if (item.call) {
      addCall(messages, itemIds, item.id, item.call);
      continue;
    }
    const content: string | ContentPart[] = item.parts.some((p) => p.media && !p.heard)
      ? item.parts.map((p): ContentPart => (p.media && !p.heard ? p.media : { type: 'text', text: p.text }))
      : item.parts.some((p) => p.heard)
        ? item.parts.flatMap((p) => (p.text.length > 0 ? [p.text] : [])).join(' ') // what was said, then typed
        : item.parts.map((p) => p.text).join('');
    if (content.length === 0) continue;
    messages.push({ role: item.role, content });
    itemIds.push(item.id);
  }
  const itemNamer: ItemNamer = (message, part) => {
    const id = itemIds[message];
    return id ? `item ${id} content[${part}]` : null;
  };
  return { messages, itemIds, itemNamer };
}

/**
 * A call joins the assistant turn just before it (text, then the calls it made: one turn, as chat completions has
 * it); a result is a tool turn. A call cut short (incomplete: its arguments are not whole JSON) is left out, and so is
 * a result of no call: either would show the model a conversation that never happened.
 */
function addCall(messages: ChatMessage[], itemIds: (string | null)[], itemId: string, call: CallData): void {
  if (call.type === 'function_call_output') {
    messages.push({ role: 'tool', content: call.output, toolCallId: call.callId });
    itemIds.push(itemId);
    return;
  }
  if (call.status !== 'completed') return;
  const toolCall = { id: call.callId, name: call.name, arguments: call.arguments };
  const last = messages.at(-1);
  if (last?.role === 'assistant') {
    messages[messages.length - 1] = { ...last, toolCalls: [...(last.toolCalls ?? []), toolCall] };
    return;
  }
  messages.push({ role: 'assistant', content: '', toolCalls: [toolCall] });
  itemIds.push(itemId);
}

/** A call item as events show it. */
function callResource(item: StoredItem, call: CallData): StoredItemResource {
  const base = { id: item.id, object: 'realtime.item', call_id: call.callId } as const;
  if (call.type === 'function_call_output')
    return { ...base, type: 'function_call_output', status: 'completed', output: call.output };
  return { ...base, type: 'function_call', status: call.status, name: call.name, arguments: call.arguments };
}

/**
 * The item as events show it. Media bytes are echoed only when the client asks for the item
 * (conversation.item.retrieve: `withMedia`), as OpenAI does with audio; an answer still being written is in_progress.
 */
export function storedItemResource(
  item: StoredItem,
  { withMedia = false, inProgress = false }: { withMedia?: boolean; inProgress?: boolean } = {},
): StoredItemResource {
  if (item.call) return callResource(item, item.call);
  return {
    id: item.id,
    object: 'realtime.item',
    type: 'message',
    role: item.role,
    status: inProgress ? 'in_progress' : 'completed',
    content: item.parts.map((p): EchoedContent => {
      const media = withMedia ? p.media : null;
      if (p.type === 'input_audio') {
        const transcript = p.text.length > 0 ? p.text : null;
        if (media?.type !== 'audio') return { type: 'input_audio', transcript };
        return {
          type: 'input_audio',
          transcript,
          audio: base64Of(media.data),
          ...(media.format === 'wav' ? { format: 'wav' } : {}),
        };
      }
      if (p.type === 'input_image')
        return media ? { type: 'input_image', image_url: imageDataUrl(media.data) } : { type: 'input_image' };
      if (p.type === 'output_audio') return { type: 'output_audio', transcript: p.text };
      return { type: p.type, text: p.text };
    }),
  };
}

/** A data: URL of image bytes, typed by what the bytes are (the format the pipeline checked them as). */
function imageDataUrl(data: Uint8Array): string {
  const mediaType = sniffImageFormat(data) === 'png' ? 'image/png' : 'image/jpeg';
  return `data:${mediaType};base64,${base64Of(data)}`;
}

const base64Of = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
