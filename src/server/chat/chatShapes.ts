/**
 * OpenAI chat.completion / chat.completion.chunk shapes, and the rule for where text goes.
 *
 * Text placement (HTTP), as OpenAI's API does it: a text-only answer's text is in `content` (delta.content when
 * streaming); an answer with audio carries its text once, as the audio's transcript (message.audio.transcript /
 * delta.audio.transcript), and `content` is null. A client never sees the same text twice.
 */
import type { FinishReason, TextLogprob, ToolCall, Usage } from '../../common/engine.ts';

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls';

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
    // OpenAI's fields, plus image_tokens and video_tokens (Chorus): the prompt positions each modality filled.
    prompt_tokens_details: {
      cached_tokens: u.cachedTokens ?? 0,
      text_tokens: u.promptTokenDetails.text,
      audio_tokens: u.promptTokenDetails.audio,
      image_tokens: u.promptTokenDetails.image,
      video_tokens: u.promptTokenDetails.video,
    },
    completion_tokens_details: { text_tokens: u.completionTokens, audio_tokens: u.audioFrames },
  };
}

/**
 * OpenAI has no 'cancelled'/'error' finish reasons; those never reach a client as a finish_reason. An answer that
 * called tools and ended (its grammar, or a stop token) finished for 'tool_calls'; one cut short keeps 'length'.
 */
export function openAiFinishReason(reason: FinishReason, numToolCalls = 0): ChatFinishReason {
  if (reason === 'length') return 'length';
  return numToolCalls > 0 ? 'tool_calls' : 'stop';
}

/** message.tool_calls entries. */
export function toolCallsBody(calls: readonly ToolCall[]): Record<string, unknown>[] {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
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
  finishReason: ChatFinishReason | null = null,
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
  finishReason: ChatFinishReason,
  usage: Usage,
  warnings?: readonly string[],
  toolCalls: readonly ToolCall[] = [],
): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: 'assistant',
    // With tool calls and no text, content is null (as OpenAI's).
    content: audio || (toolCalls.length > 0 && text.length === 0) ? null : text,
    refusal: null,
    annotations: [],
    ...(toolCalls.length > 0 ? { tool_calls: toolCallsBody(toolCalls) } : {}),
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

/**
 * A chunk or completion with choices[0].logprobs as OpenAI shapes it: {content: [{token, logprob, bytes,
 * top_logprobs}], refusal: null}. `entries` null (the request did not ask): the body as it is (logprobs null).
 */
export function withLogprobs(
  body: Record<string, unknown>,
  entries: readonly TextLogprob[] | null,
): Record<string, unknown> {
  if (entries === null) return body;
  const [choice] = body.choices as Record<string, unknown>[];
  const content = entries.map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
  return { ...body, choices: [{ ...choice, logprobs: { content, refusal: null } }] };
}
