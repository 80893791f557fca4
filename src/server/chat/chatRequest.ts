/**
 * POST /v1/chat/completions request: the OpenAI body schema (the parts Chorus implements) and its mapping to
 * a GenerateRequest. Content parts: `text`, `image_url` ({url: data:image/png|jpeg;base64,... or an
 * allow-listed URL}), `input_audio` ({data: base64, format: wav | pcm16}), `video_url` and `video` (chatVideo.ts),
 * in user messages.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { ChatMessage, ContentPart, GenerateRequest, OutputModality, ToolCall } from '../../common/engine.ts';
import { ErrorCodes } from '../../common/errors.ts';
import { generationFields, resolveMaxTokens, toEngineParams, type TokenLimits } from '../generationParams.ts';
import { bodyNamer, type ItemNamer } from '../media/itemNames.ts';
import { fetchMedia } from '../media/fetchMedia.ts';
import { audioPart, inlineImage, type MediaSources } from '../media/mediaParts.ts';
import {
  checkKwargs,
  loadVideo,
  MAX_VIDEOS,
  MmProcessorKwargs,
  videoFramesPart,
  videoSampling,
  videoUrlPart,
  type PendingVideo,
} from './chatVideo.ts';
import { ClientInputError, compileValidator } from '../validate.ts';
import { CacheSaltField } from '../cachePartition.ts';
import { otherOpenAiFields, refuseUnsupportedExtras } from './chatFields.ts';
import { planTools, ResponseFormatField, ToolCallField, ToolChoiceField, ToolField } from './chatTools.ts';
import { contentTextBytes, refuseLongText } from '../promptText.ts';

/**
 * One schema for every part type, with the per-type fields optional and checked in code: a union would make
 * TypeBox report "not in any accepted form" instead of naming the missing field.
 */
const Part = Type.Object({
  type: Type.Union([
    Type.Literal('text'),
    Type.Literal('image_url'),
    Type.Literal('input_audio'),
    Type.Literal('video_url'),
    Type.Literal('video'),
  ]),
  text: Type.Optional(Type.String()),
  image_url: Type.Optional(Type.Object({ url: Type.String({ minLength: 1 }), detail: Type.Optional(Type.String()) })),
  video_url: Type.Optional(Type.Object({ url: Type.String({ minLength: 1 }) })),
  /** A clip as its frames (image data: URLs, in order), Qwen's `{"type": "video", "video": [...]}`. */
  video: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 1024 })),
  input_audio: Type.Optional(
    Type.Object({
      data: Type.String(),
      format: Type.Union([Type.Literal('wav'), Type.Literal('pcm16')]),
      /** Chorus extension: the rate of pcm16 (default 24000, as on the Realtime API). */
      sample_rate_hz: Type.Optional(Type.Integer({ minimum: 1000, maximum: 384000 })),
    }),
  ),
});
type Part = Static<typeof Part>;

const Message = Type.Object({
  role: Type.Union([
    Type.Literal('system'),
    Type.Literal('developer'),
    Type.Literal('user'),
    Type.Literal('assistant'),
    Type.Literal('tool'),
  ]),
  content: Type.Optional(Type.Union([Type.String(), Type.Array(Part, { maxItems: 256 }), Type.Null()])),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Type.Union([Type.Null(), Type.Array(ToolCallField, { maxItems: 128 })])),
  tool_call_id: Type.Optional(Type.String({ maxLength: 256 })),
});
type Message = Static<typeof Message>;

const chatBodyFields = {
  model: Type.Optional(Type.String()),
  messages: Type.Array(Message, { minItems: 1, maxItems: 4096 }),
  modalities: Type.Optional(
    Type.Array(Type.Union([Type.Literal('text'), Type.Literal('audio')]), { minItems: 1, maxItems: 2 }),
  ),
  audio: Type.Optional(
    Type.Object({
      voice: Type.Union([Type.String({ maxLength: 64 }), Type.Object({ id: Type.String({ maxLength: 64 }) })]),
      format: Type.Union([Type.Literal('pcm16'), Type.Literal('wav')]),
    }),
  ),
  stream: Type.Optional(Type.Boolean()),
  stream_options: Type.Optional(Type.Object({ include_usage: Type.Optional(Type.Boolean()) })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  n: Type.Optional(Type.Literal(1, { errorMessage: 'must be 1: Chorus answers with one choice' })),
  // Stop sequences are refused when given (below): Chorus stops on token ids (stop_token_ids in the stage config).
  stop: Type.Optional(Type.Union([Type.Null(), Type.String(), Type.Array(Type.String(), { maxItems: 4 })])),
  // What Chorus cannot do is refused when asked for (refuseUnsupported): left out of the answer silently, each would
  // hand the client something other than what it asked for. Fields that change nothing in an answer (user, metadata,
  // store, service_tier...) are taken (chatFields.ts); a field no table names is refused by the closed schema.
  tools: Type.Optional(Type.Union([Type.Null(), Type.Array(ToolField, { maxItems: 128 })])),
  tool_choice: Type.Optional(Type.Union([Type.Null(), ToolChoiceField])),
  parallel_tool_calls: Type.Optional(Type.Union([Type.Null(), Type.Boolean()])),
  functions: Type.Optional(Type.Union([Type.Null(), Type.Array(Type.Unknown(), { maxItems: 128 })])),
  function_call: Type.Optional(Type.Unknown()),
  response_format: Type.Optional(Type.Union([Type.Null(), ResponseFormatField])),
  logprobs: Type.Optional(Type.Union([Type.Null(), Type.Boolean()])),
  top_logprobs: Type.Optional(Type.Union([Type.Null(), Type.Integer({ minimum: 0, maximum: 20 })])),
  /** vLLM's: the request's prefix-cache and encoder-output partition (cachePartition.ts). */
  cache_salt: CacheSaltField,
  // vLLM's per-request media processing (chatVideo.ts): a video's sampling.
  mm_processor_kwargs: Type.Optional(MmProcessorKwargs),
  ...generationFields,
  ...otherOpenAiFields,
};
const ChatBody = Type.Object(chatBodyFields, { additionalProperties: false });
export type ChatBody = Static<typeof ChatBody>;

const validator = compileValidator(ChatBody);

export interface ChatPlan {
  readonly request: GenerateRequest;
  /** The completion's token cap as the client asked for it (max_completion_tokens or max_tokens), and its name. */
  readonly maxTokensAsked: { readonly tokens: number; readonly param: string } | null;
  readonly stream: boolean;
  readonly audio: { readonly format: 'pcm16' | 'wav' } | null;
  /** Rewrites the engine's media item names (its message indices) into this body's. */
  readonly itemNamer: ItemNamer;
  /** The client's cache_salt (the route folds in the tenant: cachePartition.ts). */
  readonly cacheSalt: string | undefined;
  /** Whether the answer's text is read for tool calls (chatTools.ts). */
  readonly parseToolCalls: boolean;
}

const noMedia: MediaSources = { allowList: [], timeoutMs: 0, maxBytes: 0 };

/** Remote images one request may name: each is a fetch the server makes on the client's behalf. */
export const MAX_REMOTE_IMAGES = 16;

/** An image to fetch from an allowed URL, once every part of the body has passed its checks. */
interface RemoteImage {
  readonly url: URL;
  readonly what: string;
}

type PlannedPart = ContentPart | RemoteImage | PendingVideo;

const isRemoteImage = (p: PlannedPart): p is RemoteImage => 'url' in p;
const isPendingVideo = (p: PlannedPart): p is PendingVideo => 'source' in p;

/** Text-only content stays one string (the prompt is exactly what it was before media existed); with media, parts. */
function messageContent(m: Message, i: number, media: MediaSources): string | PlannedPart[] {
  const content = m.content;
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (content.every((p) => p.type === 'text'))
    return content.map((p, j) => textOf(p, `messages[${i}].content[${j}]`)).join('');
  // Every part is kept, empty text included, so part j here is part j in the engine's item names.
  return content.map((p, j) => toPart(p, m.role, `messages[${i}].content[${j}]`, media));
}

function textOf(p: Part, at: string): string {
  if (p.text === undefined) throw new ClientInputError(`${at}.text is required for a text part`, `${at}.text`);
  return p.text;
}

function toPart(p: Part, role: Message['role'], at: string, media: MediaSources): PlannedPart {
  if (p.type === 'text') return { type: 'text', text: textOf(p, at) };
  if (role !== 'user') throw new ClientInputError(`${at}: ${p.type} parts are only allowed in user messages`, at);
  if (p.type === 'video_url') {
    if (!p.video_url)
      throw new ClientInputError(
        `${at}.video_url is required for a video_url part ({url: data:video/mp4;base64,...})`,
        `${at}.video_url`,
      );
    return videoUrlPart(p.video_url.url, `${at} (video)`, media);
  }
  if (p.type === 'video') {
    if (!p.video)
      throw new ClientInputError(`${at}.video is required for a video part (its frames as data: URLs)`, `${at}.video`);
    return videoFramesPart(p.video, `${at} (video)`, media);
  }
  if (p.type === 'input_audio') {
    if (!p.input_audio)
      throw new ClientInputError(
        `${at}.input_audio is required for an input_audio part ({data: base64, format: wav | pcm16})`,
        `${at}.input_audio`,
      );
    return audioPart(p.input_audio.data, p.input_audio.format, `${at} (audio)`, p.input_audio.sample_rate_hz);
  }
  if (!p.image_url)
    throw new ClientInputError(
      `${at}.image_url is required for an image_url part ({url: data:image/png;base64,...})`,
      `${at}.image_url`,
    );
  const what = `${at} (image)`;
  const image = inlineImage(p.image_url.url, what, media.allowList);
  return image instanceof URL ? { url: image, what } : image;
}

/**
 * Fetches the remote images (all at once: at most MAX_REMOTE_IMAGES) and decodes the videos (at most MAX_VIDEOS,
 * each in its own child process) into their places; `cancel` (the client left) stops them.
 */
async function resolveDeferred(
  contents: (string | PlannedPart[])[],
  media: MediaSources,
  body: ChatBody,
  cancel: AbortSignal | undefined,
): Promise<(string | ContentPart[])[]> {
  const parts = contents.flatMap((c) => (typeof c === 'string' ? [] : c));
  const remote = parts.filter(isRemoteImage);
  const videos = parts.filter(isPendingVideo);
  if (remote.length > MAX_REMOTE_IMAGES) {
    throw new ClientInputError(
      `the request names ${remote.length} remote images; this server fetches at most ${MAX_REMOTE_IMAGES} per ` +
        `request: send the rest inline as data: URLs`,
      'messages',
    );
  }
  if (videos.length > MAX_VIDEOS) {
    throw new ClientInputError(
      `the request carries ${videos.length} videos; this server takes at most ${MAX_VIDEOS} per request`,
      'messages',
    );
  }
  if (remote.length === 0 && videos.length === 0) return contents as (string | ContentPart[])[];
  const sampling = videos.length > 0 && media.video ? videoSampling(body.mm_processor_kwargs, media.video) : null;
  const loaded = new Map<PlannedPart, ContentPart>(
    await Promise.all([
      ...remote.map(async (r) => {
        const data = await fetchMedia(r.url, media, r.what, undefined, cancel);
        return [r, { type: 'image', data } as ContentPart] as const;
      }),
      ...videos.map(async (v) => [v, await loadVideo(v, sampling!, media, cancel)] as const),
    ]),
  );
  return contents.map((c) => (typeof c === 'string' ? c : c.map((p) => loaded.get(p) ?? (p as ContentPart))));
}

function toolCallOf(c: Static<typeof ToolCallField>): ToolCall {
  return { id: c.id, name: c.function.name, arguments: c.function.arguments };
}

function toolCallIdOf(m: Message, i: number): string {
  if (m.tool_call_id === undefined)
    throw new ClientInputError(
      `messages[${i}].tool_call_id is required for a tool message`,
      `messages[${i}].tool_call_id`,
    );
  return m.tool_call_id;
}

/** Throws ClientInputError naming the first field that asks for what Chorus does not do. */
function refuseUnsupported(b: ChatBody): void {
  const stops = b.stop === undefined || b.stop === null ? [] : typeof b.stop === 'string' ? [b.stop] : b.stop;
  if (stops.length > 0) {
    throw new ClientInputError(
      "stop sequences are not supported: Chorus stops at the model's end token, at max_tokens, or at the " +
        'stop_token_ids of the stage config (default_sampling_params); leave stop out',
      'stop',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  }
  const functionCall = b.function_call !== undefined && b.function_call !== null && b.function_call !== 'none';
  if ((b.functions?.length ?? 0) > 0 || functionCall) {
    throw new ClientInputError(
      'the deprecated functions / function_call are not supported: send them as tools and tool_choice',
      (b.functions?.length ?? 0) > 0 ? 'functions' : 'function_call',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  }
  if (b.top_logprobs !== undefined && b.top_logprobs !== null && b.logprobs !== true) {
    throw new ClientInputError('top_logprobs needs logprobs: true (set it, or leave top_logprobs out)', 'top_logprobs');
  }
}

/**
 * Validates the body and plans the request: media is decoded (and fetched, from an allowed URL) here, its
 * format checked by the engine. Throws ClientInputError naming the bad field, or a media ChorusError naming the item.
 * `cancel` (the client left) stops the fetches and decodes (CHORUS_ERR_REQUEST_CANCELLED).
 */
export async function planChatCompletion(
  body: unknown,
  requestId: string,
  limits: TokenLimits,
  media: MediaSources = noMedia,
  cancel?: AbortSignal,
): Promise<ChatPlan> {
  const b = validator.parse(body, 'chat completion request');
  refuseUnsupported(b);
  refuseUnsupportedExtras(b);
  // Before media is decoded or anything tokenized: text that cannot fit costs main nothing more.
  refuseLongText(
    b.messages.reduce((n, m) => n + contentTextBytes(m.content ?? null), 0),
    limits,
    { what: "the messages' text", param: 'messages', fix: 'send shorter or fewer messages' },
  );
  const stream = b.stream === true;
  const wantsAudio = b.modalities?.includes('audio') ?? false;
  // Without an explicit audio param: pcm16 when streaming (the only streamable format), WAV otherwise.
  const format = b.audio?.format ?? (stream ? 'pcm16' : 'wav');
  if (wantsAudio && stream && format !== 'pcm16') {
    throw new ClientInputError('audio.format wav cannot be streamed: use pcm16 with stream: true', 'audio.format');
  }
  const toolPlan = await planTools(b);
  if (wantsAudio && toolPlan.parseCalls) {
    throw new ClientInputError(
      'tools with audio output are not supported in chat completions (the voice would speak the call): ask for ' +
        'modalities ["text"], or use the Realtime API',
      'tools',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  }
  if (b.mm_processor_kwargs) checkKwargs(b.mm_processor_kwargs, media.video ?? null); // refused before any decode
  const contents = await resolveDeferred(
    b.messages.map((m, i) => messageContent(m, i, media)),
    media,
    b,
    cancel,
  );
  const messages: ChatMessage[] = [];
  const bodyIndexOf: number[] = [];
  b.messages.forEach((m, i) => {
    const toolCalls = m.role === 'assistant' ? (m.tool_calls ?? []).map(toolCallOf) : [];
    // An empty message (e.g. content: null) says nothing to the model, unless it carries calls or answers one.
    if (contents[i].length === 0 && toolCalls.length === 0 && m.role !== 'tool') return;
    messages.push({
      role: m.role === 'developer' ? 'system' : m.role,
      content: contents[i],
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...(m.role === 'tool' ? { toolCallId: toolCallIdOf(m, i) } : {}),
    });
    bodyIndexOf.push(i);
  });
  if (!messages.some((m) => m.role !== 'system')) {
    throw new ClientInputError('messages has no non-empty user or assistant message', 'messages');
  }
  const param = b.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  const maxTokens = resolveMaxTokens(b.max_completion_tokens ?? b.max_tokens, limits, param);
  const modalities: OutputModality[] = wantsAudio ? ['text', 'audio'] : ['text'];
  const asked = b.max_completion_tokens ?? b.max_tokens;
  return {
    request: {
      requestId,
      messages,
      modalities,
      ...toEngineParams(b, maxTokens),
      ...(toolPlan.grammar ? { grammar: toolPlan.grammar } : {}),
      ...(toolPlan.tools.length > 0 ? { tools: toolPlan.tools } : {}),
      ...(b.logprobs === true ? { logprobs: b.top_logprobs ?? 0 } : {}),
    },
    maxTokensAsked: asked === undefined ? null : { tokens: asked, param },
    stream,
    audio: wantsAudio ? { format } : null,
    itemNamer: bodyNamer(bodyIndexOf),
    cacheSalt: b.cache_salt,
    parseToolCalls: toolPlan.parseCalls,
  };
}
