/**
 * The conversation items of the Realtime server events (conversation.item.*, response.output_item.*): what a client
 * sees of an item, OpenAI Realtime GA fields with the Chorus extensions marked.
 */

/** The content of an assistant item Chorus generates: its text, or the transcript of its audio. */
export type AssistantContent =
  | { readonly type: 'output_audio'; readonly transcript: string }
  | { readonly type: 'output_text'; readonly text: string };

/**
 * The content of a conversation item as stored: media bytes are left out of the events that announce an item, and
 * sent only when the client asks for the item (conversation.item.retrieve), as OpenAI does. The types are the
 * client's, so they include the beta `text`; an input_audio's transcript is null when none was given (OpenAI sends
 * null on the wire, where its SDK types say string); an answer's item keeps its audio's transcript, not its audio.
 */
export type EchoedContent =
  | { readonly type: 'input_text' | 'text' | 'output_text'; readonly text: string }
  | { readonly type: 'output_audio'; readonly transcript: string }
  | {
      readonly type: 'input_audio';
      readonly transcript: string | null;
      /** Retrieved items only: base64 of the audio as it was given (pcm16, or the WAV file). */
      readonly audio?: string;
      /** Chorus extension, retrieved items only: present when `audio` holds a WAV file. */
      readonly format?: 'wav';
    }
  | {
      readonly type: 'input_image';
      /** Retrieved items only: a data: URL of the image. */
      readonly image_url?: string;
    };

interface ItemBase {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'message';
  readonly status: 'in_progress' | 'completed' | 'incomplete';
}

/** The item a response produces (response.output_item.*, and conversation.item.* when it joins the conversation). */
export interface AssistantItemResource extends ItemBase {
  readonly role: 'assistant';
  readonly content: readonly AssistantContent[];
}

/** An item from conversation.item.create or input_audio_buffer.commit. */
export interface EchoedItemResource extends ItemBase {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: readonly EchoedContent[];
}

/** A call the model made (function tools, realtimeTools.ts); arguments are the JSON text generated so far. */
export interface FunctionCallItemResource {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'function_call';
  readonly status: 'in_progress' | 'completed' | 'incomplete';
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The client's result of a call. */
export interface FunctionCallOutputItemResource {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'function_call_output';
  readonly status: 'completed';
  readonly call_id: string;
  readonly output: string;
}

/** An item as the conversation holds it (conversation.item.create, a commit, a call). */
export type StoredItemResource = EchoedItemResource | FunctionCallItemResource | FunctionCallOutputItemResource;

/** What a response outputs: its message, and the calls it made. */
export type OutputItemResource = AssistantItemResource | FunctionCallItemResource;

export type ItemResource =
  AssistantItemResource | EchoedItemResource | FunctionCallItemResource | FunctionCallOutputItemResource;
