/**
 * session.update's turn_detection resolved into what is in effect, and into the VAD's turn parameters.
 *
 * server_vad is Silero's silence rule (src/voice/TurnDetector.ts). semantic_vad asks the end-of-turn model (Smart
 * Turn v3, in the VAD's worker) once a silence has lasted PROBE_SILENCE_MS: the turn ends there when the model's
 * P(complete) reaches the eagerness's threshold, else when the silence reaches the eagerness's bound (OpenAI's
 * maximum waits: 8 s, 4 s, 2 s) or speech resumes. Where the server has no such model, semantic_vad is refused,
 * unless the YAML's realtime.semantic_vad.fallback is `silence`: then it runs server_vad's rule, and the session
 * says so (chorus_end_of_turn). The same holds where the model's file does not load (the VAD loads it for the first
 * session that asks, src/voice/VadService.ts): that session is told then (turnModelFailed), later ones at once.
 */
import type { SemanticVadSpec } from '../../common/realtimeSettings.ts';
import { ErrorCodes, type ChorusError } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';
import type { TurnParams } from '../../voice/index.ts';
import type { TurnDetectionFields } from './clientEvents.ts';
import type {
  Eagerness,
  EndOfTurnResource,
  SemanticVadResource,
  ServerVadResource,
  TurnDetectionResource,
} from './SessionResource.ts';

/** OpenAI's server_vad defaults. */
export const SERVER_VAD_DEFAULTS: ServerVadResource = {
  type: 'server_vad',
  threshold: 0.5,
  prefix_padding_ms: 300,
  silence_duration_ms: 500,
  create_response: true,
  interrupt_response: true,
  idle_timeout_ms: null,
};

/**
 * Silence before the model is asked: Smart Turn v3 is trained for a VAD that stops after 200 ms (pipecat's
 * recommended stop_secs), and a shorter probe would ask it mid-pause more often.
 */
export const PROBE_SILENCE_MS = 200;

/** eagerness -> the P(complete) that ends a turn and the longest silence waited for it. auto is medium. */
export const EAGERNESS: Readonly<Record<Exclude<Eagerness, 'auto'>, { threshold: number; maxSilenceMs: number }>> = {
  low: { threshold: 0.8, maxSilenceMs: 8000 },
  medium: { threshold: 0.5, maxSilenceMs: 4000 },
  high: { threshold: 0.3, maxSilenceMs: 2000 },
};

const param = 'session.audio.input.turn_detection';

/** semantic_vad refused because its model's file does not load (the VAD's error names the file and the fix). */
export function endOfTurnUnavailable(failure: ChorusError, turnedOff = false): ClientInputError {
  const off = turnedOff ? ' (turn detection is off until then: commit turns with input_audio_buffer.commit)' : '';
  return new ClientInputError(
    `semantic_vad is unavailable: ${failure.message}; or set realtime.semantic_vad.fallback: silence in the YAML, ` +
      `or send turn_detection {type: "server_vad"}${off}`,
    `${param}.type`,
    ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE,
  );
}

function silenceFallback(reason: string): EndOfTurnResource {
  return { model: null, silence_duration_ms: SERVER_VAD_DEFAULTS.silence_duration_ms, reason };
}

function fallenBack(failure: ChorusError): EndOfTurnResource {
  return silenceFallback(`${failure.message}; the YAML's realtime.semantic_vad.fallback is silence`);
}

function endOfTurn(
  eagerness: Eagerness,
  spec: SemanticVadSpec | undefined,
  failure: ChorusError | null,
): EndOfTurnResource {
  if (spec?.modelPath && failure) {
    if (spec.fallback !== 'silence') throw endOfTurnUnavailable(failure);
    return fallenBack(failure);
  }
  if (spec?.modelPath) {
    const { threshold, maxSilenceMs } = EAGERNESS[eagerness === 'auto' ? 'medium' : eagerness];
    return { model: 'smart-turn-v3', threshold, probe_silence_ms: PROBE_SILENCE_MS, max_silence_ms: maxSilenceMs };
  }
  if (spec?.fallback === 'silence')
    return silenceFallback("no end-of-turn model on this server: the YAML's realtime.semantic_vad.fallback is silence");
  throw new ClientInputError(
    'semantic_vad needs an end-of-turn model and this server has none: install Smart Turn v3 ' +
      '(docs/voice.md#semantic_vad), set realtime.semantic_vad.fallback: silence in the YAML, or send ' +
      'turn_detection {type: "server_vad"}',
    `${param}.type`,
    ErrorCodes.PARAM_UNSUPPORTED,
  );
}

/**
 * session.update's turn_detection over what is in effect (a partial update of the same type keeps the rest).
 * `turnModelFailure`: the end-of-turn model's file is known not to load (VadService.turnModelFailure).
 */
export function resolveTurnDetection(
  given: TurnDetectionFields | undefined,
  current: TurnDetectionResource | null,
  semanticVad?: SemanticVadSpec,
  turnModelFailure: ChorusError | null = null,
): TurnDetectionResource | null {
  if (given === undefined) return current;
  if (given === null) return null;
  if (given.type === 'semantic_vad') {
    const base = current?.type === 'semantic_vad' ? current : null;
    const eagerness = given.eagerness ?? base?.eagerness ?? 'auto';
    return {
      type: 'semantic_vad',
      eagerness,
      create_response: given.create_response ?? base?.create_response ?? true,
      interrupt_response: given.interrupt_response ?? base?.interrupt_response ?? true,
      chorus_end_of_turn: endOfTurn(eagerness, semanticVad, turnModelFailure),
    } satisfies SemanticVadResource;
  }
  const base = current?.type === 'server_vad' ? current : SERVER_VAD_DEFAULTS;
  return {
    type: 'server_vad',
    threshold: given.threshold ?? base.threshold,
    prefix_padding_ms: given.prefix_padding_ms ?? base.prefix_padding_ms,
    silence_duration_ms: given.silence_duration_ms ?? base.silence_duration_ms,
    create_response: given.create_response ?? base.create_response,
    interrupt_response: given.interrupt_response ?? base.interrupt_response,
    idle_timeout_ms: given.idle_timeout_ms === undefined ? base.idle_timeout_ms : given.idle_timeout_ms,
  };
}

/**
 * The end-of-turn model did not load for a session whose semantic_vad counted on it: what it runs now (the silence
 * rule, when the YAML falls back to it) or null (turn detection off, `error` to send).
 */
export function afterTurnModelFailure(
  current: TurnDetectionResource | null,
  spec: SemanticVadSpec | undefined,
  failure: ChorusError,
): { readonly turns: TurnDetectionResource | null; readonly error: ClientInputError | null } {
  if (current?.type !== 'semantic_vad') return { turns: current, error: null };
  if (spec?.fallback === 'silence')
    return { turns: { ...current, chorus_end_of_turn: fallenBack(failure) }, error: null };
  return { turns: null, error: endOfTurnUnavailable(failure, true) };
}

/** The VAD's parameters for what is in effect. */
export function turnParams(t: TurnDetectionResource): TurnParams {
  if (t.type === 'server_vad')
    return {
      threshold: t.threshold,
      prefixPaddingMs: t.prefix_padding_ms,
      silenceDurationMs: t.silence_duration_ms,
      idleTimeoutMs: t.idle_timeout_ms,
    };
  const end = t.chorus_end_of_turn;
  const common = {
    threshold: SERVER_VAD_DEFAULTS.threshold,
    prefixPaddingMs: SERVER_VAD_DEFAULTS.prefix_padding_ms,
    idleTimeoutMs: null,
  };
  if (end.model === null) return { ...common, silenceDurationMs: end.silence_duration_ms };
  return {
    ...common,
    silenceDurationMs: end.max_silence_ms,
    endOfTurn: { probeMs: end.probe_silence_ms, threshold: end.threshold },
  };
}
