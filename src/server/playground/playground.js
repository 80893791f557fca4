// Chorus playground: one realtime session, streaming text and gap-free audio playback, TTFT/TTFP per response.
// Plain browser JavaScript, no build step. Server data is only ever inserted with textContent.
'use strict';

const SAMPLE_RATE_HZ = 24000;
const START_LEAD_S = 0.05; // first buffer starts a little ahead so it is not scheduled in the past

const $ = (id) => document.getElementById(id);
const state = {
  ws: null,
  audioContext: null,
  nextStartTime: 0, // where the next buffer starts: the end of the previous one (back to back)
  sources: new Set(),
  current: null, // the response in flight
  responses: [], // exposed for tests as window.chorusPlayground
};
window.chorusPlayground = state;

function authHeaders() {
  const key = $('apiKey').value.trim();
  return key ? { authorization: `Bearer ${key}` } : {};
}

async function loadStages() {
  const box = $('stages');
  try {
    const res = await fetch('/v1/stages', { headers: authHeaders() });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const graph = await res.json();
    box.textContent = '';
    graph.stages.forEach((stage, i) => {
      if (i > 0) {
        const arrow = document.createElement('span');
        arrow.className = 'arrow';
        arrow.textContent = '→';
        box.append(arrow);
      }
      const health = (graph.health || []).find((h) => h.stage_id === stage.stage_id);
      const el = document.createElement('span');
      el.className = 'stage';
      el.dataset.stageId = stage.stage_id;
      el.dataset.status = health ? health.status : 'unknown';
      el.textContent = `${stage.stage_id} (${stage.kind})`;
      const small = document.createElement('small');
      small.textContent = health ? health.status : '';
      el.append(small);
      box.append(el);
    });
    const mode = document.createElement('small');
    mode.textContent = graph.async_chunk ? '  async_chunk on' : '  async_chunk off';
    box.append(mode);
  } catch (err) {
    box.textContent = `could not load the stage graph: ${err.message}`;
  }
}

function connect() {
  if (state.ws && state.ws.readyState <= WebSocket.OPEN) return Promise.resolve(state.ws);
  const key = $('apiKey').value.trim();
  const protocols = key ? ['realtime', `openai-insecure-api-key.${key}`] : ['realtime'];
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/realtime`;
  const ws = new WebSocket(url, protocols);
  state.ws = ws;
  ws.onmessage = (msg) => onServerEvent(JSON.parse(msg.data));
  ws.onclose = () => setStatus('disconnected');
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error('could not connect to /v1/realtime'));
  });
}

function setStatus(text) {
  $('status').textContent = text;
}

function ensureAudio() {
  if (!state.audioContext) state.audioContext = new AudioContext();
  if (state.audioContext.state === 'suspended') void state.audioContext.resume();
  return state.audioContext;
}

/** Schedules one pcm16 chunk right where the previous one ends, so playback has no gaps. */
function playChunk(base64) {
  const ctx = ensureAudio();
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  const buffer = ctx.createBuffer(1, samples.length, SAMPLE_RATE_HZ);
  buffer.copyToChannel(samples, 0);
  const source = ctx.createBufferSource();
  source.buffer = buffer;
  source.connect(ctx.destination);
  const r = state.current;
  // Fell behind (the network was slower than playback): restart just ahead of now and count the underrun.
  if (state.nextStartTime < ctx.currentTime) {
    if (r.schedule.length > 0) r.underruns++;
    state.nextStartTime = ctx.currentTime + START_LEAD_S;
  }
  source.start(state.nextStartTime);
  r.schedule.push({
    start: state.nextStartTime,
    duration: buffer.duration,
    samples: samples.length,
    first: samples[0],
  });
  state.nextStartTime += buffer.duration;
  state.sources.add(source);
  source.onended = () => state.sources.delete(source);
  r.audioSamples += samples.length;
}

function stopAudio() {
  for (const s of state.sources) s.stop();
  state.sources.clear();
  state.nextStartTime = 0;
}

function row(r) {
  if (!r.row) {
    r.row = document.createElement('tr');
    r.row.dataset.responseId = r.id;
    $('responses').prepend(r.row);
  }
  const cells = [
    r.id,
    r.status,
    fmt(r.ttftMs),
    fmt(r.ttfpMs),
    (r.audioSamples / SAMPLE_RATE_HZ).toFixed(2),
    String(r.underruns),
  ];
  r.row.textContent = '';
  for (const text of cells) {
    const td = document.createElement('td');
    td.textContent = text;
    r.row.append(td);
  }
}

function fmt(ms) {
  return ms === null ? '–' : ms.toFixed(1);
}

function onServerEvent(e) {
  const r = state.current;
  if (!r && e.type.startsWith('response.')) return; // nothing in flight (a cancelled response is already closed)
  switch (e.type) {
    case 'response.created':
      if (r) {
        r.id = e.response.id;
        row(r);
      }
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
      playChunk(e.delta);
      row(r);
      break;
    case 'response.done':
      r.status = e.response.status;
      row(r);
      setStatus(r.status);
      $('send').disabled = false;
      $('cancel').disabled = true;
      state.current = null;
      break;
    case 'error':
      setStatus(`error ${e.error.code}: ${e.error.message}`);
      if (r && !r.id) {
        state.current = null;
        $('send').disabled = false;
        $('cancel').disabled = true;
      }
      break;
  }
}

async function send() {
  const prompt = $('prompt').value.trim();
  if (!prompt || state.current) return;
  ensureAudio(); // created inside the click so autoplay policies allow it
  stopAudio();
  $('send').disabled = true;
  setStatus('connecting');
  let ws;
  try {
    ws = await connect();
  } catch (err) {
    setStatus(err.message);
    $('send').disabled = false;
    return;
  }
  const audio = $('audio').checked;
  const r = {
    id: null,
    status: 'in_progress',
    text: '',
    ttftMs: null,
    ttfpMs: null,
    audioSamples: 0,
    underruns: 0,
    schedule: [],
    sentAt: 0,
    cancelled: false,
    row: null,
  };
  state.current = r;
  state.responses.push(r);
  $('output').textContent = '';
  ws.send(
    JSON.stringify({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] },
    }),
  );
  r.sentAt = performance.now();
  ws.send(JSON.stringify({ type: 'response.create', response: { output_modalities: [audio ? 'audio' : 'text'] } }));
  $('cancel').disabled = false;
  setStatus('streaming');
}

function cancel() {
  const r = state.current;
  if (!r || !state.ws) return;
  r.cancelled = true;
  stopAudio();
  state.ws.send(JSON.stringify({ type: 'response.cancel' }));
  setStatus('cancelling');
}

$('send').addEventListener('click', () => void send());
$('cancel').addEventListener('click', cancel);
$('apiKey').addEventListener('change', () => {
  if (state.ws) state.ws.close();
  state.ws = null;
  void loadStages();
});
void loadStages();
