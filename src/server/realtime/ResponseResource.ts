/**
 * The response resource of the Realtime server events (response.created, response.done) and the content parts of
 * its message, OpenAI Realtime GA fields with the Chorus extensions marked.
 */
import type { OutputItemResource } from './ItemResource.ts';
import type { AudioFormat } from './SessionResource.ts';

export interface UsageResource {
  readonly total_tokens: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly input_token_details: {
    readonly text_tokens: number;
    readonly audio_tokens: number;
    readonly image_tokens: number;
    readonly cached_tokens: number;
  };
  readonly output_token_details: { readonly text_tokens: number; readonly audio_tokens: number };
  /** Chorus extension: seconds of audio generated. */
  readonly audio_seconds: number;
}

export type ResponseStatusDetails =
  | { readonly type: 'incomplete'; readonly reason: 'max_output_tokens' }
  | { readonly type: 'cancelled'; readonly reason: 'client_cancelled' | 'turn_detected' }
  | {
      readonly type: 'failed';
      /** `message` is a Chorus extension: what went wrong, with the item named when it was a media item. */
      readonly error: { readonly type: string; readonly code: string; readonly message: string };
    };

/**
 * status_details, conversation_id and usage are left out when there is none (a response in progress, an out-of-band
 * one, one without usage yet): the openai SDK types them optional but not nullable, so a null there is a value its
 * users' code is not written for (`if (r.usage !== undefined) r.usage.total_tokens` throws on null).
 */
export interface ResponseResource {
  readonly id: string;
  readonly object: 'realtime.response';
  readonly status: 'in_progress' | 'completed' | 'cancelled' | 'failed' | 'incomplete';
  readonly status_details?: ResponseStatusDetails;
  readonly output: readonly OutputItemResource[];
  readonly conversation_id?: string;
  readonly output_modalities: readonly ('text' | 'audio')[];
  readonly max_output_tokens: number | 'inf';
  readonly audio: {
    readonly output: { readonly format: AudioFormat; readonly voice: string | { readonly id: string } };
  };
  readonly usage?: UsageResource;
  readonly metadata: Readonly<Record<string, string>> | null;
  /** Chorus extension, present only when there is something to say. */
  readonly chorus_warnings?: readonly string[];
  /**
   * Chorus extension, on response.done: TTFT and TTFP as the server measured them (LatencyMeter.ts), from the
   * request's arrival or, for a voice turn's automatic answer, from speech_stopped.
   */
  readonly chorus_latency?: {
    readonly from: 'request' | 'speech_stopped';
    readonly ttft_ms: number | null;
    readonly ttfp_ms: number | null;
  };
}

export type ContentPartResource =
  { readonly type: 'audio'; readonly transcript: string } | { readonly type: 'text'; readonly text: string };
