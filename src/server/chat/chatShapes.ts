/**
 * OpenAI chat.completion / chat.completion.chunk shapes, and the rule for where text goes.
 *
 * Text placement (HTTP): text is always in `content` (delta.content when streaming), as DESIGN.md specifies.
 * When audio is on, the same text is also the audio's transcript (message.audio.transcript, or
 * delta.audio.transcript on the same chunk), which is where OpenAI's own audio responses put it. A client
 * reads one or the other; both always agree.
 */
import type { FinishReason, Usage } from '../../engine/types.ts';

export interface CompletionMeta {
  readonly id: string;
  readonly created: number; // unix seconds
  readonly model: string;
}

export function usageBody(u: Usage): Record<string, unknown> {
  const completionTokens = u.completionTokens + u.audioFrames;
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: u.promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { text_tokens: u.completionTokens, audio_tokens: u.audioFrames },
  };
}

/** OpenAI has no 'cancelled'/'error' finish reasons; those never reach a client as a finish_reason. */
export function openAiFinishReason(reason: FinishReason): 'stop' | 'length' {
  return reason === 'length' ? 'length' : 'stop';
}

/**
 * Chorus extension: what the answer left out although the request asked for it (a media item dropped under
 * on_encoder_failure: text_only), one sentence each, on the completion / its final chunk. Absent when empty,
 * so responses without anything to report are exactly OpenAI's shape.
 */
function warningsField(warnings: readonly string[] | undefined): Record<string, unknown> {
  return warnings && warnings.length > 0 ? { chorus_warnings: warnings } : {};
}

export function chunkBody(
  meta: CompletionMeta,
  delta: Record<string, unknown>,
  finishReason: 'stop' | 'length' | null = null,
  usage: Usage | null = null,
  warnings?: readonly string[],
): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: null,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    ...(usage ? { usage: usageBody(usage) } : {}),
    ...warningsField(warnings),
  };
}

export function completionBody(
  meta: CompletionMeta,
  text: string,
  audio: { readonly id: string; readonly base64: string } | null,
  finishReason: 'stop' | 'length',
  usage: Usage,
  warnings?: readonly string[],
): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: text, refusal: null, annotations: [] };
  if (audio) {
    // expires_at: OpenAI keeps audio for multi-turn references; Chorus keeps nothing, so "now" is honest.
    message.audio = { id: audio.id, data: audio.base64, expires_at: meta.created, transcript: text };
  }
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: null,
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    usage: usageBody(usage),
    ...warningsField(warnings),
  };
}
