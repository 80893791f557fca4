// The realtime server events: each one recorded (for tests and the log) and applied to the page.
import { $, logLine, setStatus, setVoice, state } from './page.js';
import { stopMic } from './mic.js';
import { onSpeechStarted, playChunk } from './playback.js';
import { newResponse, responseFor, row } from './responses.js';

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
  state.events.push(seen);
}

export function onServerEvent(e) {
  record(e);
  switch (e.type) {
    case 'input_audio_buffer.speech_started':
      onSpeechStarted(e);
      return;
    case 'input_audio_buffer.speech_stopped':
      state.lastSpeechStoppedAt = performance.now();
      setVoice(state.mic.on ? 'listening' : 'off');
      logLine(e.type, `at ${e.audio_end_ms} ms`);
      return;
    case 'input_audio_buffer.timeout_triggered':
      state.lastSpeechStoppedAt = performance.now();
      logLine(e.type, `${e.audio_start_ms}–${e.audio_end_ms} ms`);
      return;
    case 'input_audio_buffer.committed':
      logLine(e.type, e.item_id);
      return;
    case 'conversation.item.truncated': {
      const t = state.truncations.find((x) => x.itemId === e.item_id && !x.answered);
      if (t) t.answered = true;
      logLine(e.type, `${e.item_id} at ${e.audio_end_ms} ms`);
      return;
    }
    case 'response.created':
      onResponseCreated(e);
      return;
    case 'error':
      onError(e);
      return;
  }
  const r = responseFor(e);
  if (!r) return; // a response this page no longer follows
  switch (e.type) {
    case 'response.output_item.added':
      r.itemId = e.item.id;
      break;
    case 'response.output_text.delta':
    case 'response.output_audio_transcript.delta':
      if (r.ttftMs === null) r.ttftMs = performance.now() - r.sentAt;
      r.text += e.delta;
      $('output').textContent = r.text;
      row(r);
      break;
    case 'response.output_audio.delta':
      if (r.cancelled) break;
      if (r.ttfpMs === null) r.ttfpMs = performance.now() - r.sentAt;
      playChunk(e.delta, r);
      row(r);
      break;
    case 'response.done':
      r.status = e.response.status;
      r.reason = (e.response.status_details && e.response.status_details.reason) || null;
      r.usage = e.response.usage || null;
      row(r);
      setStatus(r.status);
      logLine(e.type, `${r.id} ${r.status}${r.reason ? ` (${r.reason})` : ''}`);
      if (state.current === r) state.current = null;
      $('send').disabled = false;
      $('cancel').disabled = true;
      break;
  }
}

function onResponseCreated(e) {
  // A response this page asked for (Send) is waiting for its id; anything else is an automatic answer to a turn.
  let r = state.current && state.current.id === null ? state.current : null;
  if (!r) r = newResponse('voice', state.lastSpeechStoppedAt === null ? performance.now() : state.lastSpeechStoppedAt);
  r.id = e.response.id;
  state.current = r;
  $('send').disabled = true;
  $('cancel').disabled = false;
  setStatus('streaming');
  if (r.source === 'voice') $('output').textContent = '';
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
    state.current = null;
    $('send').disabled = false;
    $('cancel').disabled = true;
  }
  // Turn detection refused (session.update) or lost (the server's VAD could not start; that error names no param):
  // appending would only fill the input buffer, so the mic goes off and says why.
  const turnsLost = e.error.param === 'session.audio.input.turn_detection' || /^server_vad /.test(e.error.message);
  if (state.mic.on && turnsLost) stopMic(e.error.message);
}
