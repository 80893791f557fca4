/**
 * POST /v1/chat/completions request: the OpenAI body schema (the parts Chorus implements) and its mapping to
 * a GenerateRequest.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { ChatMessage, GenerateRequest, Modality } from '../../engine/types.ts';
import { generationFields, resolveMaxTokens, toEngineParams, type TokenLimits } from '../generationParams.ts';
import { ClientInputError, compileValidator } from '../validate.ts';

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() });

const Message = Type.Object({
  role: Type.Union([Type.Literal('system'), Type.Literal('developer'), Type.Literal('user'), Type.Literal('assistant')]),
  content: Type.Union([Type.String(), Type.Array(TextPart, { maxItems: 256 }), Type.Null()]),
  name: Type.Optional(Type.String()),
});

const ChatBody = Type.Object({
  model: Type.Optional(Type.String()),
  messages: Type.Array(Message, { minItems: 1, maxItems: 4096 }),
  modalities: Type.Optional(Type.Array(Type.Union([Type.Literal('text'), Type.Literal('audio')]), { minItems: 1, maxItems: 2 })),
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
  n: Type.Optional(Type.Literal(1)),
  ...generationFields,
});
export type ChatBody = Static<typeof ChatBody>;

const validator = compileValidator(ChatBody);

export interface ChatPlan {
  readonly request: GenerateRequest;
  readonly stream: boolean;
  readonly audio: { readonly format: 'pcm16' | 'wav' } | null;
}

function messageText(content: Static<typeof Message>['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => p.text).join('');
}

/** Validates the body and plans the request. Throws ClientInputError naming the bad field. */
export function planChatCompletion(body: unknown, requestId: string, limits: TokenLimits): ChatPlan {
  const b = validator.parse(body, 'chat completion request');
  const stream = b.stream === true;
  const wantsAudio = b.modalities?.includes('audio') ?? false;
  // Without an explicit audio param: pcm16 when streaming (the only streamable format), WAV otherwise.
  const format = b.audio?.format ?? (stream ? 'pcm16' : 'wav');
  if (wantsAudio && stream && format !== 'pcm16') {
    throw new ClientInputError('audio.format wav cannot be streamed: use pcm16 with stream: true', 'audio.format');
  }
  const messages: ChatMessage[] = b.messages
    .map((m) => ({ role: m.role === 'developer' ? 'system' : m.role, content: messageText(m.content) }) as ChatMessage)
    .filter((m) => m.content.length > 0);
  if (!messages.some((m) => m.role !== 'system')) {
    throw new ClientInputError('messages has no non-empty user or assistant message', 'messages');
  }
  const param = b.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  const maxTokens = resolveMaxTokens(b.max_completion_tokens ?? b.max_tokens, limits, param);
  const modalities: Modality[] = wantsAudio ? ['text', 'audio'] : ['text'];
  return {
    request: { requestId, messages, modalities, ...toEngineParams(b, maxTokens) },
    stream,
    audio: wantsAudio ? { format } : null,
  };
}
