/**
 * Shapes of the realtime server events' payloads (OpenAI Realtime GA): the session, response and item
 * resources, usage, and ids, typed by ServerEvent.ts.
 */
import { randomBytes } from 'node:crypto';
import type { Usage } from '../../common/engine.ts';
import type { ChorusError } from '../../common/errors.ts';
import { errorType, wireCode } from '../httpErrors.ts';
import type { ErrorEvent } from './ServerEvent.ts';
import type { AssistantContent, AssistantItemResource, OutputItemResource } from './ItemResource.ts';
import type { AudioFormat, SessionResource, TranscriptionResource, TurnDetectionResource } from './SessionResource.ts';
import type { ResponseResource, ResponseStatusDetails, UsageResource } from './ResponseResource.ts';
import type { TranscriptionSetting } from './transcriptionSetting.ts';
import type { GenerationFields } from '../generationParams.ts';
import type { ResponseLatency } from '../metrics/LatencyMeter.ts';
import type { TruncationSetting } from './planTruncation.ts';
import { NO_TOOLS, toolsResource, type SessionTools } from './realtimeTools.ts';
import { tracingStatus, type TracingSetting } from './sessionTracing.ts';

export const PCM_FORMAT: AudioFormat = Object.freeze({ type: 'audio/pcm', rate: 24000 });

/** Event ids only need to be unique: a random per-process prefix and a counter (one per delta, so it is cheap). */
const EVENT_ID_PREFIX = `event_${randomBytes(9).toString('base64url')}`;
let eventCount = 0;

export function newId(prefix: 'sess' | 'resp' | 'item' | 'conv' | 'event'): string {
  if (prefix === 'event') return `${EVENT_ID_PREFIX}${(eventCount++).toString(36)}`;
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

/** The `error` event saying why the client event `eventId` (null: not known) failed; the session stays open. */
export function errorEvent(
  e: ChorusError,
  eventId: string | null,
  param: string | null,
  id = newId('event'),
): ErrorEvent {
  const error = { type: errorType(e.code), code: wireCode(e.code), message: e.message, param, event_id: eventId };
  return { type: 'error', event_id: id, error };
}

export type OutputModality = 'text' | 'audio';

export interface SessionState {
  readonly id: string;
  /** The served model's name as the client last named it (an alias in model_aliases is echoed as given). */
  model: string;
  outputModalities: OutputModality[];
  voice: string | { id: string };
  instructions: string;
  maxOutputTokens: number | 'inf';
  generation: GenerationFields;
  /** Function tools, tool_choice and parallel_tool_calls (realtimeTools.ts). */
  tools: SessionTools;
  /** null: the client commits turns (input_audio_buffer.commit). */
  turnDetection: TurnDetectionResource | null;
  /** Input audio transcription (transcriptionSetting.ts); null: off, as OpenAI's default. */
  transcription: TranscriptionSetting | null;
  /** What goes when the conversation outgrows the Thinker (planTruncation.ts); "auto" unless the client says. */
  truncation: TruncationSetting;
  /** The engine's cache salt for every response (cachePartition.ts: the tenant and session.cache_salt); not echoed. */
  cacheSalt: string | undefined;
  /** session.tracing as the client set it (sessionTracing.ts), and whether the server records traces at all. */
  tracing: TracingSetting;
  readonly serverTracing: boolean;
  /** What transcribes input audio whatever transcription model the client names; null: nothing (items fail). */
  readonly transcriber: string | null;
}

/** A new session's settings: OpenAI's defaults, and what the server and the client's key decide. */
export function newSessionState(
  server: Pick<SessionState, 'model' | 'cacheSalt' | 'serverTracing' | 'transcriber'>,
): SessionState {
  return {
    ...server,
    id: newId('sess'),
    outputModalities: ['audio'],
    voice: 'alloy',
    instructions: '',
    maxOutputTokens: 'inf',
    generation: {},
    turnDetection: null,
    transcription: null,
    truncation: 'auto',
    tools: NO_TOOLS,
    tracing: null,
  };
}

export function sessionResource(s: SessionState): SessionResource {
  return {
    type: 'realtime',
    object: 'realtime.session',
    id: s.id,
    model: s.model,
    output_modalities: s.outputModalities,
    instructions: s.instructions,
    max_output_tokens: s.maxOutputTokens,
    audio: {
      input: {
        format: PCM_FORMAT,
        turn_detection: s.turnDetection,
        ...(s.transcription ? { transcription: transcriptionResource(s.transcription, s.transcriber) } : {}),
      },
      output: { format: PCM_FORMAT, voice: s.voice },
    },
    truncation: s.truncation,
    tracing: s.tracing,
    chorus_tracing: tracingStatus(s.serverTracing),
    ...toolsResource(s.tools),
    ...s.generation, // Chorus extensions, echoed so clients see what is in effect
  };
}

/** The model as the client named it, and (Chorus extension) what does the work whatever the name. */
function transcriptionResource(t: TranscriptionSetting, transcriber: string | null): TranscriptionResource {
  return {
    model: t.model,
    ...(t.language ? { language: t.language } : {}),
    ...(t.prompt ? { prompt: t.prompt } : {}),
    chorus_transcriber:
      transcriber ?? 'none: this pipeline has no speech-to-text (no asr: in its YAML), each item gets .failed',
  };
}

export type ResponseStatus = 'in_progress' | 'completed' | 'cancelled' | 'failed' | 'incomplete';
export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface AssistantItem {
  readonly id: string;
  readonly audio: boolean;
  status: ItemStatus;
  text: string;
}

/** An assistant item: audio responses carry the text as the audio's transcript, text responses as output_text. */
export function itemResource(item: AssistantItem): AssistantItemResource {
  const content: AssistantContent[] =
    item.status === 'in_progress'
      ? []
      : [item.audio ? { type: 'output_audio', transcript: item.text } : { type: 'output_text', text: item.text }];
  return { id: item.id, object: 'realtime.item', type: 'message', role: 'assistant', status: item.status, content };
}

export interface ResponseState {
  readonly id: string;
  readonly conversationId: string | null;
  readonly outputModalities: OutputModality[];
  readonly voice: string | { id: string };
  readonly maxOutputTokens: number | 'inf';
  readonly item: AssistantItem;
  status: ResponseStatus;
  statusDetails: ResponseStatusDetails | null;
  usage: Usage | null;
  /** What the answer left out although asked (a media item dropped under on_encoder_failure: text_only). */
  warnings: readonly string[] | null;
  /** TTFT and TTFP as the server measured them, once the response is done. */
  latency?: ResponseLatency;
  /** response.metadata as the client gave it. */
  readonly metadata: Readonly<Record<string, string>> | null;
}

/** `output`: the response's items, its message and calls (ResponseStream). */
export function responseResource(r: ResponseState, output: readonly OutputItemResource[]): ResponseResource {
  return {
    id: r.id,
    object: 'realtime.response',
    status: r.status,
    ...(r.statusDetails === null ? {} : { status_details: r.statusDetails }),
    output,
    ...(r.conversationId === null ? {} : { conversation_id: r.conversationId }),
    output_modalities: r.outputModalities,
    max_output_tokens: r.maxOutputTokens,
    audio: { output: { format: PCM_FORMAT, voice: r.voice } },
    ...(r.usage === null ? {} : { usage: usageResource(r.usage) }),
    metadata: r.metadata,
    // Chorus extension, present only when there is something to say, so other responses are OpenAI's shape.
    ...(r.warnings && r.warnings.length > 0 ? { chorus_warnings: r.warnings } : {}),
    ...(r.latency ? { chorus_latency: r.latency } : {}),
  };
}

/** Audio "tokens" are codec frames, the unit the Talker generates. */
export function usageResource(u: Usage): UsageResource {
  const outputTokens = u.completionTokens + u.audioFrames;
  return {
    total_tokens: u.promptTokens + outputTokens,
    input_tokens: u.promptTokens,
    output_tokens: outputTokens,
    input_token_details: {
      text_tokens: u.promptTokenDetails.text,
      audio_tokens: u.promptTokenDetails.audio,
      image_tokens: u.promptTokenDetails.image,
      cached_tokens: u.cachedTokens ?? 0,
    },
    output_token_details: { text_tokens: u.completionTokens, audio_tokens: u.audioFrames },
    audio_seconds: u.audioSeconds, // Chorus extension
  };
}
