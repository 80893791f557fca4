// The session settings panel: its controls read as one session.update, sent when a session opens and whenever a
// control changes while one is open (automatic voice answers use the session's settings, not the Send button's).
// Voice is left out: the server has no voices to choose from (tiny-omni's weights are random), so a voice control
// would change nothing a listener can hear.
import { $, logLine, state } from './page.js';
import { sendEvent } from './socket.js';

const DEFAULT_MAX_TOKENS = 200; // random weights never stop by themselves: every answer is capped
const RETENTION_RATIO = 0.5;

function numberIn(id, min, max, fallback) {
  const n = Number($(id).value);
  return Number.isFinite(n) && n >= min && n <= max ? n : fallback;
}

export function maxTokens() {
  const n = Number.parseInt($('maxTokens').value, 10);
  return Number.isFinite(n) && n >= 1 ? n : DEFAULT_MAX_TOKENS;
}

export function outputModalities() {
  return [$('audio').checked ? 'audio' : 'text'];
}

/** Server VAD finds the turns while the mic is on and the VAD box is ticked; otherwise the page commits them. */
export function vadOn() {
  return $('vad').checked;
}

function truncation() {
  const v = $('truncation').value;
  return v === 'retention_ratio' ? { type: 'retention_ratio', retention_ratio: RETENTION_RATIO } : v;
}

function turnDetection() {
  if (!state.mic.on || !vadOn()) return null;
  return {
    type: 'server_vad',
    threshold: numberIn('vadThreshold', 0, 1, 0.5),
    silence_duration_ms: Math.round(numberIn('vadSilence', 0, 10_000, 500)),
    create_response: true, // each turn answered as it ends
    interrupt_response: true, // speaking over an answer cancels it (barge-in)
  };
}

/** The session as the panel says it should be. */
export function sessionSettings() {
  return {
    type: 'realtime',
    instructions: $('instructions').value,
    temperature: numberIn('temperature', 0, 2, 1),
    max_output_tokens: maxTokens(),
    output_modalities: outputModalities(),
    truncation: truncation(),
    audio: { input: { turn_detection: turnDetection() } },
  };
}

/** Sends the panel to the open session (a no-op with none: the next session gets it when it opens). */
export function applySettings() {
  const session = sessionSettings();
  if (!sendEvent({ type: 'session.update', session })) return false;
  state.settingsSent = session;
  const turns = session.audio.input.turn_detection;
  logLine(
    'session.update',
    `max ${session.max_output_tokens} tokens, temperature ${session.temperature}, ` +
      `truncation ${typeof session.truncation === 'string' ? session.truncation : 'retention_ratio'}, ` +
      `VAD ${turns ? `threshold ${turns.threshold}, silence ${turns.silence_duration_ms} ms` : 'off'}`,
  );
  return true;
}

export function watchSettings(onVadChanged) {
  for (const id of ['instructions', 'temperature', 'maxTokens', 'audio', 'truncation', 'vadThreshold', 'vadSilence'])
    $(id).addEventListener('change', applySettings);
  $('vad').addEventListener('change', () => {
    applySettings();
    onVadChanged();
  });
}
