/**
 * A Realtime session's input audio transcription, as session.update asks for it: the GA
 * `session.audio.input.transcription` or the beta `session.input_audio_transcription`, each `{model, language?,
 * prompt?}` or null (off). Checked by hand, like truncation, so a bad value names its field and what it may be; the
 * one place that reads the setting, so every caller (the session, the Agents SDK defaults) takes the same rules.
 *
 * `model` is the name the client asked for and is echoed back; whatever name it gives, the pipeline's own
 * speech-to-text does the work (docs/openai-surface.md): OpenAI's names (`gpt-4o-mini-transcribe`, `whisper-1`...)
 * are what clients send by default, and refusing them would refuse the OpenAI Agents SDK's first session.update.
 */
import { ClientInputError } from '../validate.ts';

export interface TranscriptionSetting {
  readonly model: string;
  /** ISO-639-1, or null: the model's own language. */
  readonly language: string | null;
  /** Text the model is primed with (names, spellings), or null. */
  readonly prompt: string | null;
}

const FIELDS = ['model', 'language', 'prompt'] as const;
const MAX_PROMPT_CHARS = 1024; // Whisper's decoder holds 448 positions; a prompt is cut to its last 223 tokens
const show = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 64));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One setting's value: null turns transcription off; anything else must be {model, language?, prompt?}. */
export function parseTranscription(value: unknown, param: string): TranscriptionSetting | null {
  if (value === null) return null;
  if (!isObject(value))
    throw new ClientInputError(`${param} must be null or {model, language?, prompt?}; got ${show(value)}`, param);
  const unknown = Object.keys(value).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined)
    throw new ClientInputError(
      `${param}.${unknown} is not a field of ${param} (its fields: ${FIELDS.join(', ')})`,
      param,
    );
  const { model, language, prompt } = value;
  if (model !== undefined && (typeof model !== 'string' || model.length === 0 || model.length > 128))
    throw new ClientInputError(`${param}.model must be a model name (a string); got ${show(model)}`, `${param}.model`);
  if (language !== undefined && language !== null && (typeof language !== 'string' || !/^[a-z]{2}$/.test(language)))
    throw new ClientInputError(
      `${param}.language must be an ISO-639-1 code such as "en"; got ${show(language)}`,
      `${param}.language`,
    );
  if (prompt !== undefined && prompt !== null && (typeof prompt !== 'string' || prompt.length > MAX_PROMPT_CHARS))
    throw new ClientInputError(
      `${param}.prompt must be a string of at most ${MAX_PROMPT_CHARS} characters; got ${show(prompt)}`,
      `${param}.prompt`,
    );
  return {
    model: typeof model === 'string' ? model : 'whisper-1',
    language: typeof language === 'string' ? language : null,
    prompt: typeof prompt === 'string' && prompt.length > 0 ? prompt : null,
  };
}

interface SessionFieldsWithTranscription {
  readonly audio?: { readonly input?: { readonly transcription?: unknown } };
  readonly input_audio_transcription?: unknown;
}

/**
 * What a session.update's session says of transcription: undefined when it says nothing (the setting in effect
 * stays), else the new setting (null: off). The GA field wins; both set to different values is refused rather than
 * one silently dropped.
 */
export function transcriptionOfSession(s: SessionFieldsWithTranscription): TranscriptionSetting | null | undefined {
  const ga = s.audio?.input?.transcription;
  const beta = s.input_audio_transcription;
  if (ga !== undefined && beta !== undefined && JSON.stringify(ga) !== JSON.stringify(beta))
    throw new ClientInputError(
      'session.audio.input.transcription and session.input_audio_transcription (its beta name) differ: send one',
      'session.input_audio_transcription',
    );
  if (ga !== undefined) return parseTranscription(ga, 'session.audio.input.transcription');
  if (beta !== undefined) return parseTranscription(beta, 'session.input_audio_transcription');
  return undefined;
}
