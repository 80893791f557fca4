/**
 * OpenAI chat.completion / chat.completion.chunk shapes, and the rule for where text goes.
 *
 * Text placement (HTTP), as OpenAI's API does it: a text-only answer's text is in `content` (delta.content when
 * streaming); an answer with audio carries its text once, as the audio's transcript (message.audio.transcript /
 * delta.audio.transcript), and `content` is null. A client never sees the same text twice.
 */
import type { FinishReason, Usage } from '../../common/engine.ts';

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
    // OpenAI's fields, plus image_tokens (Chorus): the prompt positions each modality filled.
    prompt_tokens_details: {
      cached_tokens: u.cachedTokens ?? 0,
      text_tokens: u.promptTokenDetails.text,
      audio_tokens: u.promptTokenDetails.audio,
      image_tokens: u.promptTokenDetails.image,
    },
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
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: audio ? null : text,
    refusal: null,
    annotations: [],
  };
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
