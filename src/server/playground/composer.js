// Send (text and an optional image), cancel, and the session settings that follow the controls.
import { $, logLine, maxTokens, outputModalities, setStatus, state } from './page.js';
import { ensureAudio, stopAudio } from './playback.js';
import { newResponse } from './responses.js';
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
  $('output').textContent = '';
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
  $('cancel').disabled = false;
  setStatus('streaming');
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

/** Session settings follow the controls while a session is open (automatic answers use them). */
export function onSessionControlsChanged() {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
  sendEvent({
    type: 'session.update',
    session: { type: 'realtime', output_modalities: outputModalities(), max_output_tokens: maxTokens() },
  });
}
