// The realtime server events: each one recorded (for tests and the log) and applied to the page.
import { isFrameItem, onFrameItem } from './camera.js';
import { addAnswerTurn, addUserTurn, plainStatus, removeTurn, showContext, updateAnswerTurn } from './conversation.js';
import { $, logLine, setStatus, setVoice, state } from './page.js';
import { stopMic } from './mic.js';
import { onSpeechStarted, playChunk } from './playback.js';
import { newResponse, responseFor, row } from './responses.js';

/** Where the VAD heard each turn, by item id (speech_started / speech_stopped): a spoken turn's length. */
const speech = new Map();

const MAX_EVENTS_KEPT = 20000; // of state.events (a test reads them by index, so they are kept, never rotated)

const isDelta = (type) => type.endsWith('.delta');

/** Keeps what tests and the log need of an event: its type and the small fields, never audio or text. */
function record(e) {
  state.eventCounts[e.type] = (state.eventCounts[e.type] || 0) + 1;
  if (isDelta(e.type) || state.events.length >= MAX_EVENTS_KEPT) return;
  const seen = { type: e.type, at: performance.now() };
  for (const k of ['item_id', 'audio_start_ms', 'audio_end_ms', 'response_id']) if (k in e) seen[k] = e[k];
  if (e.response) {
    seen.response_id = e.response.id;
    seen.status = e.response.status;
    seen.reason = (e.response.status_details && e.response.status_details.reason) || null;
  }
  if (e.item) seen.item = { id: e.item.id, role: e.item.role, content: (e.item.content || []).map((c) => c.type) };
  if (e.error) seen.error = { code: e.error.code, message: e.error.message, param: e.error.param };
  if (e.session) {
    const s = e.session;
    seen.session = {
      id: s.id,
      instructions: s.instructions,
      temperature: s.temperature,
      max_output_tokens: s.max_output_tokens,
      truncation: s.truncation,
      turn_detection: (s.audio && s.audio.input && s.audio.input.turn_detection) || null,
    };
  }
  state.events.push(seen);
}

export function onServerEvent(e) {
  record(e);
  if (onSessionEvent(e)) return;
  const r = responseFor(e);
  if (r) onResponseEvent(e, r); // else: a response this page no longer follows
}

/** The events of the session, its input and its items (and response.created, error); false: a response's event. */
function onSessionEvent(e) {
  switch (e.type) {
    case 'session.created':
      state.session = { id: e.session.id };
      $('sessionId').textContent = `session ${e.session.id}`;
      logLine(e.type, e.session.id);
      break;
    case 'conversation.item.added':
      if (e.item && isFrameItem(e.item.id)) onFrameItem(e.item.id, true);
      else if (e.item && e.item.role === 'user') addUserTurn(e.item, speech.get(e.item.id));
      break;
    case 'conversation.item.deleted':
      if (isFrameItem(e.item_id)) {
        onFrameItem(e.item_id, false);
        break;
      }
      speech.delete(e.item_id);
      logLine(e.type, `${e.item_id}${removeTurn(e.item_id) ? ' (out of the context: removed from the view)' : ''}`);
      break;
    case 'input_audio_buffer.speech_started':
      speech.set(e.item_id, { startMs: e.audio_start_ms, endMs: e.audio_start_ms });
      onSpeechStarted(e);
      break;
    case 'input_audio_buffer.speech_stopped':
      if (speech.has(e.item_id)) speech.get(e.item_id).endMs = e.audio_end_ms;
      state.lastSpeechStoppedAt = performance.now();
      setVoice(state.mic.on ? 'listening' : 'off');
      logLine(e.type, `at ${e.audio_end_ms} ms`);
      break;
    case 'input_audio_buffer.timeout_triggered':
      state.lastSpeechStoppedAt = performance.now();
      logLine(e.type, `${e.audio_start_ms}–${e.audio_end_ms} ms`);
      break;
    case 'input_audio_buffer.committed':
      logLine(e.type, e.item_id);
      break;
    case 'conversation.item.truncated': {
      const t = state.truncations.find((x) => x.itemId === e.item_id && !x.answered);
      if (t) t.answered = true;
      logLine(e.type, `${e.item_id} at ${e.audio_end_ms} ms`);
      break;
    }
    case 'response.created':
      onResponseCreated(e);
      break;
    case 'error':
      onError(e);
      break;
    default:
      return false;
  }
  return true;
}

/** An event of response `r`, one this page follows. */
function onResponseEvent(e, r) {
  switch (e.type) {
    case 'response.output_item.added':
      r.itemId = e.item.id;
      break;
    case 'response.output_text.delta':
    case 'response.output_audio_transcript.delta':
      if (r.ttftMs === null) r.ttftMs = performance.now() - r.sentAt;
      r.text += e.delta;
      updateAnswerTurn(r);
      row(r);
      break;
    case 'response.output_audio.delta':
      if (r.cancelled) break;
      if (r.ttfpMs === null) r.ttfpMs = performance.now() - r.sentAt;
      playChunk(e.delta, r);
      updateAnswerTurn(r);
      row(r);
      break;
    case 'response.done':
      onResponseDone(e, r);
      break;
  }
}

function onResponseDone(e, r) {
  const details = e.response.status_details;
  r.status = e.response.status;
  r.reason = (details && details.reason) || null;
  r.errorMessage = (details && details.error && details.error.message) || null;
  r.usage = e.response.usage || null;
  r.maxOutputTokens = e.response.max_output_tokens;
  // Chorus's own measurement of this response, when the server sends one (a Chorus extension of the event).
  r.serverLatency = e.response.chorus_latency || null;
  row(r);
  updateAnswerTurn(r);
  showContext(r.usage);
  setStatus(plainStatus(r));
  logLine(e.type, `${r.id} ${r.status}${r.reason ? ` (${r.reason})` : ''}`);
  if (state.current === r) state.current = null;
  $('send').disabled = false;
  $('cancel').disabled = true;
}

function onResponseCreated(e) {
  // A response this page asked for (Send) is waiting for its id; anything else is an automatic answer to a turn.
  let r = state.current && state.current.id === null ? state.current : null;
  if (!r) r = newResponse('voice', state.lastSpeechStoppedAt === null ? performance.now() : state.lastSpeechStoppedAt);
  r.id = e.response.id;
  state.current = r;
  $('send').disabled = true;
  $('cancel').disabled = false;
  setStatus('answering…');
  addAnswerTurn(r);
  logLine(e.type, `${r.id} (${r.source})`);
  row(r);
}

function onError(e) {
  setStatus(`error ${e.error.code}: ${e.error.message}`);
  logLine('error', `${e.error.code}: ${e.error.message}`);
  const r = state.current;
  // The response.create this page sent was refused: there is no response to wait for.
  if (r && r.id === null && (!e.error.event_id || e.error.event_id === r.createEventId)) {
    r.status = 'refused';
    r.errorMessage = e.error.message;
    state.current = null;
    $('send').disabled = false;
    $('cancel').disabled = true;
  }
  // Turn detection refused (session.update) or lost (the server's VAD could not start; that error names no param):
  // appending would only fill the input buffer, so the mic goes off and says why.
  const turnsLost = e.error.param === 'session.audio.input.turn_detection' || /^server_vad /.test(e.error.message);
  if (state.mic.on && turnsLost) stopMic(e.error.message);
}
