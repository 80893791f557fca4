// Send (text and an optional image), Send speech (a turn the page commits when server VAD is off), cancel, and a
// new session.
import { clearFrames, stopCamera } from './camera.js';
import { clearConversation } from './conversation.js';
import { stopMic } from './mic.js';
import { $, logLine, setStatus, state } from './page.js';
import { ensureAudio, stopAudio } from './playback.js';
import { clearResponses, newResponse } from './responses.js';
import { maxTokens, outputModalities } from './settings.js';
import { connect, sendEvent } from './socket.js';

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export async function send() {
  const prompt = $('prompt').value.trim();
  const file = state.pipeline.imageInput ? $('image').files[0] : undefined;
  if ((!prompt && !file) || state.current) return;
  ensureAudio(); // created inside the click so autoplay policies allow it
  stopAudio();
  $('send').disabled = true;
  setStatus('connecting');
  let content;
  try {
    await connect();
    content = prompt ? [{ type: 'input_text', text: prompt }] : [];
    if (file) content.push({ type: 'input_image', image_url: await readDataUrl(file) });
  } catch (err) {
    setStatus(err.message);
    $('send').disabled = false;
    return;
  }
  const r = newResponse('text', 0);
  state.current = r;
  sendEvent({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content } });
  if (file) {
    logLine('conversation.item.create', `text + image ${file.name}`);
    $('image').value = ''; // attached once: the image is in the conversation now
    $('imagePreview').hidden = true;
  }
  r.sentAt = performance.now();
  r.createEventId = `evt_pg_${state.responses.length}`;
  sendEvent({
    type: 'response.create',
    event_id: r.createEventId,
    response: { output_modalities: outputModalities(), max_output_tokens: maxTokens() },
  });
  $('prompt').value = ''; // sent: it is in the transcript now
  $('cancel').disabled = false;
  setStatus('answering…');
}

/** Server VAD off: what the mic sent since the last turn becomes one turn, answered now (t0: this click). */
export function commitSpeech() {
  if (state.current || !state.mic.on) return;
  const r = newResponse('commit', performance.now());
  r.createEventId = `evt_pg_${state.responses.length}`;
  state.current = r;
  sendEvent({ type: 'input_audio_buffer.commit' });
  sendEvent({
    type: 'response.create',
    event_id: r.createEventId,
    response: { output_modalities: outputModalities(), max_output_tokens: maxTokens() },
  });
  setStatus('answering…');
}

/**
 * A new Realtime session: the mic and playback stop, this session's socket closes (the server forgets its
 * conversation), the transcript clears, and a new session opens at once with the settings panel applied.
 */
export async function newSession() {
  if (state.mic.on) stopMic('new session');
  if (state.camera.on) stopCamera('new session');
  clearFrames();
  stopAudio();
  const old = state.ws;
  state.ws = null;
  if (old) old.close(1000, 'new session');
  state.current = null;
  state.playing = null;
  state.session = null;
  $('sessionId').textContent = 'opening a new session…';
  clearConversation();
  clearResponses();
  $('send').disabled = false;
  $('cancel').disabled = true;
  logLine('new session', old ? 'the old one closed' : '');
  try {
    await connect();
    setStatus('idle');
  } catch (err) {
    setStatus(err.message);
  }
}

export function cancel() {
  const r = state.current;
  if (!r || !state.ws) return;
  r.cancelled = true;
  stopAudio();
  sendEvent({ type: 'response.cancel' });
  setStatus('cancelling');
}

export async function showPreview() {
  const file = $('image').files[0];
  const img = $('imagePreview');
  if (!file) {
    img.hidden = true;
    return;
  }
  img.src = await readDataUrl(file); // a data: URL, which the CSP's img-src allows
  img.alt = file.name;
  img.hidden = false;
}
