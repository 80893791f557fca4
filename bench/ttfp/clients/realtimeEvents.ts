/**
 * How bench clients read Realtime server events (the fields they use, loosely typed: the bench measures any server
 * speaking the protocol): the trace event a delta makes, and what a response.done or error event says of the
 * response.
 */
import type { RequestTrace, TraceEvent } from '../trace.ts';
import { pcm16SamplesInBase64 } from './BenchClient.ts';

export interface RealtimeEvent {
  readonly type: string;
  readonly delta?: string;
  readonly response_id?: string;
  readonly audio_end_ms?: number;
  readonly response?: {
    readonly id?: string;
    readonly status?: string;
    readonly status_details?: { readonly error?: { readonly code?: string; readonly message?: string } } | null;
    readonly usage?: {
      readonly input_tokens?: number;
      readonly input_token_details?: { readonly cached_tokens?: number };
      readonly output_token_details?: { readonly text_tokens?: number };
    } | null;
  };
  readonly error?: { readonly code?: string; readonly message?: string; readonly event_id?: string | null };
  /** conversation.item.* events. */
  readonly item?: { readonly id?: string; readonly role?: string };
}

/** The trace event of a text or audio delta (audio at `sampleRateHz`); null for any other event. */
export function deltaTraceEvent(e: RealtimeEvent, atMs: number, sampleRateHz: number): TraceEvent | null {
  switch (e.type) {
    case 'response.output_audio_transcript.delta':
    case 'response.output_text.delta':
      return { type: 'text', atMs };
    case 'response.output_audio.delta':
      return { type: 'audio', atMs, samples: pcm16SamplesInBase64(e.delta ?? ''), sampleRateHz };
    default:
      return null;
  }
}

/** How a response ended (response.done), or what an error event says; null for any other event. */
export function responseOutcome(e: RealtimeEvent): { ok: boolean; error?: string } | null {
  if (e.type === 'error') return { ok: false, error: `${e.error?.code ?? 'error'}: ${e.error?.message ?? ''}` };
  if (e.type !== 'response.done') return null;
  const status = e.response?.status;
  // incomplete = stopped at max_output_tokens: still a full measurement
  if (status === 'completed' || status === 'incomplete') return { ok: true };
  const err = e.response?.status_details?.error;
  return { ok: false, error: `response ${status}: ${err?.code ?? ''} ${err?.message ?? ''}`.trim() };
}

/** What a response.done's usage says of the tokens, as trace fields (absent: the server did not say). */
export function usageFields(
  response: RealtimeEvent['response'] | undefined,
): Pick<RequestTrace, 'promptTokens' | 'cachedTokens' | 'textTokens'> {
  const u = response?.usage;
  const cached = u?.input_token_details?.cached_tokens;
  const text = u?.output_token_details?.text_tokens;
  return {
    ...(u?.input_tokens !== undefined ? { promptTokens: u.input_tokens } : {}),
    ...(cached !== undefined ? { cachedTokens: cached } : {}),
    ...(text !== undefined ? { textTokens: text } : {}),
  };
}
