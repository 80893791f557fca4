/**
 * What a response.create asks the engine for, over a session's conversation: one function for the answers a client
 * asks for, the automatic ones of voice turns, the held (speculative) ones and the voice prefill, so that a held
 * answer is built exactly as the answer it stands in for (HeldAnswer compares the two requests), and a prefill
 * computes the prompt its answer will have. That includes which items session.truncation leaves out: planned here,
 * applied (the items forgotten) only by the response that is created.
 */
import type { ChorusError } from '../../common/errors.ts';
import type { GenerateRequest } from '../../common/engine.ts';
import { mergeGeneration, resolveMaxTokens, toEngineParams, type TokenLimits } from '../generationParams.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import type { ResponseFields } from './clientEvents.ts';
import { Conversation, toChatMessages, type RenderedConversation, type StoredItem } from './Conversation.ts';
import { planTruncation, truncationError, type TruncationSetting } from './planTruncation.ts';
import type { PromptPositions } from './PromptPositions.ts';
import type { OutputModality, SessionState } from './serverEvents.ts';
import { mergeTools, planCalls, type CallPlan } from './realtimeTools.ts';

export interface PlanContext {
  readonly state: SessionState;
  /** The conversation's items now. */
  readonly items: readonly StoredItem[];
  readonly media: MediaChecker;
  readonly tokenLimits: TokenLimits;
  /** The session's prefix key (voice prefill), if any. */
  readonly prefixKey: string | undefined;
  /** Counts what items take in the Thinker; null when the engine cannot (then nothing is truncated). */
  readonly positions: PromptPositions | null;
}

export interface ResponsePlan {
  readonly outputModalities: OutputModality[];
  readonly maxOutputTokens: number | 'inf';
  readonly inConversation: boolean;
  readonly rendered: RenderedConversation;
  /** Audio is generated: the session asks for it and the answer is not calls only. */
  readonly audio: boolean;
  /** The function tools the answer may or must call (no grammar: none). */
  readonly calls: CallPlan;
  /** Conversation items session.truncation leaves out, oldest first: the response that is created forgets them. */
  readonly truncated: readonly string[];
  /** The prompt cannot fit the Thinker (truncation disabled, or no plan fits): the response fails with this. */
  readonly failure: ChorusError | null;
  /** response.metadata, read back on the response; its `traceparent` goes with the request (tracedEngine). */
  readonly metadata: Readonly<Record<string, string>> | null;
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
  const instructions = r.instructions ?? state.instructions;
  // response.input is the client's own list for this response: it is sent whole or refused, never cut.
  const setting = r.input ? 'disabled' : state.truncation;
  const answerPositions = maxTokens ?? ctx.tokenLimits.stageDefault;
  const fit = fitToThinker(items, instructions, answerPositions, setting, ctx.positions, r.input !== undefined);
  const dropped = new Set(fit.truncated);
  const kept = dropped.size === 0 ? items : items.filter((it) => !dropped.has(it.id));
  const rendered = toChatMessages(instructions, kept);
  const asksTools = r.tools !== undefined || r.tool_choice !== undefined || r.parallel_tool_calls !== undefined;
  const calls = planCalls(asksTools ? mergeTools(r, state.tools, 'response') : state.tools, 'response');
  // A call is never spoken: an answer that is calls only runs the Thinker alone.
  const audio = outputModalities.includes('audio') && !calls.forced;
  const modalities: OutputModality[] = audio ? ['text', 'audio'] : ['text'];
  const generation = mergeGeneration(state.generation, r);
  const metadata = r.metadata ?? null;
  const request = (requestId: string): GenerateRequest => ({
    requestId,
    messages: rendered.messages,
    modalities,
    ...toEngineParams(generation, maxTokens),
    // Starts from what was prefilled while the user spoke (the Thinker checks every reused input).
    ...(ctx.prefixKey ? { prefix: { key: ctx.prefixKey } } : {}),
    ...(metadata?.traceparent !== undefined ? { traceparent: metadata.traceparent } : {}),
    ...(state.cacheSalt !== undefined ? { cacheSalt: state.cacheSalt } : {}),
    ...(calls.grammar ? { grammar: calls.grammar } : {}),
    ...(calls.tools.length > 0 ? { tools: calls.tools } : {}),
  });
  return { outputModalities, maxOutputTokens, inConversation, rendered, audio, calls, request, metadata, ...fit };
}

/** session.truncation over the items' counted positions (planTruncation.ts). */
function fitToThinker(
  items: readonly StoredItem[],
  instructions: string,
  answerPositions: number,
  setting: TruncationSetting,
  positions: PromptPositions | null,
  isInput: boolean,
): Pick<ResponsePlan, 'truncated' | 'failure'> {
  if (!positions) return { truncated: [], failure: null };
  const input = {
    items: items.map((it) => ({ id: it.id, positions: positions.item(it) })),
    instructionsPositions: positions.instructions(instructions),
    maxPositions: positions.maxPositions,
    autoPositions: positions.autoPositions,
    answerPositions,
    setting,
  };
  const plan = planTruncation(input);
  if (!plan.fits) return { truncated: [], failure: truncationError(plan, input, isInput) };
  return { truncated: plan.drop, failure: null };
}
