/**
 * What a response.create asks the engine for, over a session's conversation: one function for the answers a client
 * asks for, the automatic ones of voice turns and the held (speculative) ones, so that a held answer is built exactly
 * as the answer it stands in for (HeldAnswer compares the two requests).
 */
import type { GenerateRequest, Modality } from '../../common/engine.ts';
import { mergeGeneration, resolveMaxTokens, toEngineParams, type TokenLimits } from '../generationParams.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import type { ResponseFields } from './clientEvents.ts';
import { Conversation, toChatMessages, type RenderedConversation, type StoredItem } from './Conversation.ts';
import type { OutputModality, SessionState } from './serverEvents.ts';

export interface PlanContext {
  readonly state: SessionState;
  /** The conversation's items now. */
  readonly items: readonly StoredItem[];
  readonly media: MediaChecker;
  readonly tokenLimits: TokenLimits;
  /** The session's prefix key (voice prefill), if any. */
  readonly prefixKey: string | undefined;
}

export interface ResponsePlan {
  readonly outputModalities: OutputModality[];
  readonly maxOutputTokens: number | 'inf';
  readonly inConversation: boolean;
  readonly rendered: RenderedConversation;
  readonly audio: boolean;
  /** The engine request, under `requestId`. */
  request(requestId: string): GenerateRequest;
}

/** Realtime output is either audio (with its transcript) or text; asking for both means audio. */
export function normalizeModalities(m: readonly OutputModality[]): OutputModality[] {
  return m.includes('audio') ? ['audio'] : ['text'];
}

/** `pending`: the turn about to be committed, after the conversation's items (a held answer). */
export function planResponse(r: ResponseFields, ctx: PlanContext, pending?: StoredItem): ResponsePlan {
  const { state } = ctx;
  const outputModalities = r.output_modalities ? normalizeModalities(r.output_modalities) : state.outputModalities;
  const maxOutputTokens = r.max_output_tokens ?? state.maxOutputTokens;
  const maxTokens = resolveMaxTokens(maxOutputTokens, ctx.tokenLimits, 'response.max_output_tokens');
  const inConversation = r.conversation !== 'none';
  const items = r.input
    ? r.input.map((it, i) => Conversation.toStored(it, ctx.media, `response.input[${i}]`))
    : pending
      ? [...ctx.items, pending]
      : ctx.items;
  const rendered = toChatMessages(r.instructions ?? state.instructions, items);
  const audio = outputModalities.includes('audio');
  const modalities: Modality[] = audio ? ['text', 'audio'] : ['text'];
  const generation = mergeGeneration(state.generation, r);
  const request = (requestId: string): GenerateRequest => ({
    requestId,
    messages: rendered.messages,
    modalities,
    ...toEngineParams(generation, maxTokens),
    // Starts from what was prefilled while the user spoke (the Thinker checks every reused input).
    ...(ctx.prefixKey ? { prefix: { key: ctx.prefixKey } } : {}),
  });
  return { outputModalities, maxOutputTokens, inConversation, rendered, audio, request };
}
