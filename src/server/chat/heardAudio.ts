/**
 * Chat completions on a pipeline that hears speech through its speech-to-text (MediaChecker.heard: no audio
 * encoder, a YAML `asr:`): each input_audio part is checked (its header, as for an encoder), transcribed, and goes
 * to the Thinker as a text part of its transcript, all of a request's parts at once, before it is admitted. A
 * request whose client goes away meanwhile stops its transcriptions.
 */
import type { ChatMessage, ContentPart } from '../../common/engine.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import type { Transcriber } from '../transcription/Transcriber.ts';
import type { TranscriptionSetting } from '../realtime/transcriptionSetting.ts';
import type { ChatPlan } from './chatRequest.ts';

const SETTING: TranscriptionSetting = { model: 'whisper-1', language: null, prompt: null };

export async function hearChatAudio(
  plan: ChatPlan,
  media: MediaChecker,
  transcriber: Transcriber | null,
  signal: AbortSignal,
): Promise<ChatPlan> {
  if (!transcriber || !media.heard('audio')) return plan;
  const { messages } = plan.request;
  if (!messages.some((m) => typeof m.content !== 'string' && m.content.some((p) => p.type === 'audio'))) return plan;
  const heard = await Promise.all(
    messages.map(async (m, i): Promise<ChatMessage> => {
      if (typeof m.content === 'string') return m;
      const content = await Promise.all(
        m.content.map(async (p, j): Promise<ContentPart> => {
          if (p.type !== 'audio') return p;
          media.check(p, `${plan.itemNamer(i, j) ?? `messages[${i}].content[${j}]`} (audio)`);
          return { type: 'text', text: await transcriber.transcribe(p, SETTING, signal, () => {}) };
        }),
      );
      return { ...m, content };
    }),
  );
  return { ...plan, request: { ...plan.request, messages: heard } };
}
