// The page's state and the small pieces every part of it uses: element lookup, the status line, the event log and
// the voice indicator.

const EVENT_LOG_LINES = 200;

export const $ = (id) => document.getElementById(id);

/** Everything the page knows, exposed as globalThis.chorusPlayground for tests (plain data, except ws/audio). */
export const state = {
  ws: null,
  audioContext: null,
  nextStartTime: 0, // where the next buffer starts: the end of the previous one (back to back)
  sources: new Set(),
  current: null, // the response in flight (the server runs at most one per session)
  playing: null, // the response whose audio is scheduled (it may have finished generating long before)
  responses: [],
  session: null, // {id} from session.created: the Realtime session this page talks to
  settingsSent: null, // the last session.update's session, as sent
  turns: [], // the transcript as data: {role, kind: 'text' | 'speech' | 'answer', itemId, text, ...} in order
  context: null, // {usedPositions, maxPositions, inputTokens, cachedTokens} after each answer
  speaking: false, // the assistant's audio is playing
  events: [], // server events seen, deltas left out (they are counted in eventCounts)
  eventCounts: {},
  truncations: [], // conversation.item.truncate sent: {itemId, responseId, audioEndMs, answered}
  pipeline: { loaded: false, audioInput: false, imageInput: false, thinkerPositions: null },
  mic: { on: false, state: 'off', level: 0, chunksSent: 0, msSent: 0, error: null },
  camera: { on: false, framesSent: 0, inConversation: [], error: null }, // inConversation: frame item ids, oldest first
  lastSpeechStoppedAt: null, // performance.now() of the last speech_stopped: an automatic answer's t0
  waterfall: null, // {responseId, status: 'loading' | 'drawn' | 'failed', traceId, lanes, error}: the one shown
  micModuleLoaded: false, // micWorklet.js added to the AudioContext as its worklet module
};

export function authHeaders() {
  const key = $('apiKey').value.trim();
  return key ? { authorization: `Bearer ${key}` } : {};
}

export function setStatus(text) {
  $('status').textContent = text;
}

/** One line in the event log (newest last, the list scrolled to it), capped. */
export function logLine(type, text) {
  const list = $('events');
  const li = document.createElement('li');
  li.dataset.type = type;
  li.textContent = `${(performance.now() / 1000).toFixed(2)} s  ${type}${text ? `  ${text}` : ''}`;
  list.append(li);
  while (list.children.length > EVENT_LOG_LINES) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

/** A toggle button's state: pressed (on) or not, and its label (what the next press does). */
export function setPressed(button, on, label) {
  button.setAttribute('aria-pressed', String(on));
  button.textContent = label;
}

export function setVoice(voiceState) {
  state.mic.state = voiceState;
  const el = $('voice');
  el.dataset.state = voiceState;
  el.textContent = { off: 'mic off', listening: 'listening…', speaking: 'you are speaking' }[voiceState];
}

/** The assistant's audio is playing (scheduled buffers not yet ended), or not. */
export function setSpeaking(on) {
  state.speaking = on;
  logLine('assistant', on ? 'speaking' : 'done speaking');
  const el = $('speaking');
  el.dataset.state = on ? 'speaking' : 'quiet';
  el.textContent = on ? 'assistant speaking' : 'assistant quiet';
}
