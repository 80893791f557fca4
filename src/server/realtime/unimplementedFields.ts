/**
 * Realtime fields OpenAI defines and Chorus does not implement, and the beta names of fields Chorus takes under their
 * GA names. The event schemas accept them (so the refusal can say why, not "unexpected property"); refuseUnimplemented
 * then refuses each one set to a value that asks for something, naming it. Taken silently, a stored `prompt`
 * would hand the client an answer other than the one it asked for, with no word (issue 32). A value that
 * asks for nothing (a null, an empty list) is taken: clients that send their defaults work unchanged. Fields the
 * schemas do not know at all are refused there. Function tools (realtimeTools.ts), input transcription
 * (transcriptionSetting.ts) and tracing (sessionTracing.ts) are implemented.
 */
import { Type } from '@sinclair/typebox';
import { ErrorCodes } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';

interface Unimplemented {
  /** True when the value asks for nothing Chorus would have to do. */
  readonly asksNothing: (value: unknown) => boolean;
  /** Why it is refused and what to send instead. */
  readonly why: string;
}

const nullish = (v: unknown) => v === undefined || v === null;
const noneOrEmpty = (v: unknown) => nullish(v) || (Array.isArray(v) && v.length === 0);

const common: Record<string, Unimplemented> = {
  prompt: {
    asksNothing: nullish,
    why: 'stored prompts are not supported: send the prompt text as instructions',
  },
  reasoning: {
    asksNothing: nullish,
    why: 'reasoning settings are not supported: the Thinker has no reasoning mode; leave reasoning out',
  },
};

const session: Record<string, Unimplemented> = {
  ...common,
  include: {
    asksNothing: noneOrEmpty,
    why: 'no optional output can be included (input transcription logprobs are not made): leave include out',
  },
};

const sessionAudioInput: Record<string, Unimplemented> = {
  noise_reduction: {
    asksNothing: nullish,
    why: 'noise reduction is not supported: leave it out or null',
  },
};

const sessionAudioOutput: Record<string, Unimplemented> = {
  speed: {
    asksNothing: (v) => nullish(v) || v === 1,
    why: 'speech speed cannot be changed: the vocoder speaks at one rate; leave speed out (or 1)',
  },
};

const response: Record<string, Unimplemented> = { ...common };

/** Beta names (the Realtime API before GA) -> their GA names, which Chorus takes. */
const betaNames: Record<string, string> = {
  modalities: 'output_modalities',
  voice: 'audio.output.voice',
  input_audio_format: 'audio.input.format',
  output_audio_format: 'audio.output.format',
  input_audio_noise_reduction: 'audio.input.noise_reduction',
  max_response_output_tokens: 'max_output_tokens',
};

/** Schema entries for the names above: each accepted by the schema, then judged by refuseUnimplemented. */
function accepted(...tables: Record<string, unknown>[]) {
  const names = tables.flatMap((t) => Object.keys(t));
  return Object.fromEntries(names.map((n) => [n, Type.Optional(Type.Unknown())]));
}

export const unimplementedSessionFields = accepted(session, betaNames);
export const unimplementedAudioInputFields = accepted(sessionAudioInput);
export const unimplementedAudioOutputFields = accepted(sessionAudioOutput);
export const unimplementedResponseFields = accepted(response, betaNames);

function refuse(value: object | undefined, table: Record<string, Unimplemented>, at: string): void {
  if (!value) return;
  for (const [name, rule] of Object.entries(table)) {
    const v = (value as Record<string, unknown>)[name];
    if (!rule.asksNothing(v))
      throw new ClientInputError(`${at}.${name}: ${rule.why}`, `${at}.${name}`, ErrorCodes.PARAM_UNSUPPORTED);
  }
}

function refuseBetaNames(value: object | undefined, at: string): void {
  if (!value) return;
  for (const [beta, ga] of Object.entries(betaNames)) {
    if ((value as Record<string, unknown>)[beta] === undefined) continue;
    throw new ClientInputError(
      `${at}.${beta} is the beta Realtime API's name: send ${at}.${ga} (the GA field), which Chorus implements`,
      `${at}.${beta}`,
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  }
}

interface AudioSection {
  readonly input?: object;
  readonly output?: object;
}

/** session.update's session: throws ClientInputError (CHORUS_ERR_PARAM_UNSUPPORTED) naming the first field refused. */
export function refuseUnimplementedSession(s: object & { readonly audio?: AudioSection }): void {
  refuseBetaNames(s, 'session');
  refuse(s, session, 'session');
  refuse(s.audio?.input, sessionAudioInput, 'session.audio.input');
  refuse(s.audio?.output, sessionAudioOutput, 'session.audio.output');
}

/** response.create's response, likewise. */
export function refuseUnimplementedResponse(r: object | undefined): void {
  refuseBetaNames(r, 'response');
  refuse(r, response, 'response');
}
