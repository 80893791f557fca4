// Chorus playground: one realtime session; streaming text and gap-free audio playback, TTFT/TTFP per response; a
// microphone with server VAD turns and barge-in; image attach; the stage graph drawn as the DAG it is.
// Plain browser JavaScript, no build step. Server data is only ever inserted with textContent / setAttribute.
//
// This one file is also the page's AudioWorklet module (audioWorklet.addModule loads it again, in the audio
// thread's scope, where only the Resampler and the processor below run). The page's CSP allows scripts from 'self'
// and nothing else (no blob: or data: modules), and the server serves exactly this script.
'use strict';

const SAMPLE_RATE_HZ = 24000; // the Realtime API's pcm16 rate, both ways
const START_LEAD_S = 0.05; // first buffer starts a little ahead so it is not scheduled in the past
const MIC_CHUNK_MS = 20; // one input_audio_buffer.append per 20 ms of speech (the server VAD's timeline grain)
const MIC_CHUNK_SAMPLES = (SAMPLE_RATE_HZ * MIC_CHUNK_MS) / 1000;
const MIC_PROCESSOR = 'chorus-mic';
const DEFAULT_MAX_TOKENS = 200; // random weights never stop by themselves: every answer is capped
const EVENT_LOG_LINES = 200;
const MAX_EVENTS_KEPT = 20000; // of state.events (a test reads them by index, so they are kept, never rotated)

// ---------------------------------------------------------------------------------------------------------------
// Shared by the page and the worklet: microphone audio -> 24 kHz pcm16 chunks.

/**
 * Streaming resampler to 24 kHz pcm16 by box-filter integration: each output sample is the mean of the input over
 * its own 1/24000 s (fractional overlaps weighted). That low-passes enough for speech at 44.1/48 kHz in, needs no
 * lookahead, and carries its phase across blocks so chunk boundaries leave no clicks. Input at or below 24 kHz is
 * held (each output sample takes the input sample it falls in). Whole chunks go to `onChunk(pcm16, rms)`.
 */
class Resampler {
  constructor(inputRateHz, chunkSamples, onChunk) {
    this.ratio = inputRateHz / SAMPLE_RATE_HZ; // input samples per output sample
    this.sum = 0; // weighted input toward the output sample being built
    this.filled = 0; // how much of it (in input samples, 0..ratio) is covered
    this.chunkSamples = chunkSamples;
    this.chunk = new Int16Array(chunkSamples);
    this.at = 0;
    this.sumSquares = 0;
    this.onChunk = onChunk;
  }

  push(input) {
    const r = this.ratio;
    for (let i = 0; i < input.length; i++) {
      const x = input[i];
      let remaining = 1; // of this input sample, still to be assigned to output samples
      while (this.filled + remaining >= r) {
        const take = r - this.filled;
        this.emit((this.sum + x * take) / r);
        this.sum = 0;
        this.filled = 0;
        remaining -= take;
      }
      this.sum += x * remaining;
      this.filled += remaining;
    }
  }

  emit(y) {
    const clamped = Math.max(-1, Math.min(1, y));
    this.chunk[this.at++] = Math.round(clamped < 0 ? clamped * 32768 : clamped * 32767);
    this.sumSquares += clamped * clamped;
    if (this.at < this.chunkSamples) return;
    this.onChunk(this.chunk, Math.sqrt(this.sumSquares / this.chunkSamples));
    this.chunk = new Int16Array(this.chunkSamples); // the previous one was handed over (transferred)
    this.at = 0;
    this.sumSquares = 0;
  }
}

/** Runs in the AudioWorkletGlobalScope: mono input (the node downmixes) -> 20 ms pcm16 chunks to the page. */
function registerMicProcessor() {
  class MicProcessor extends AudioWorkletProcessor {
    constructor() {
      super();
      // `sampleRate` is the worklet scope's global: the AudioContext's rate.
      this.resampler = new Resampler(sampleRate, MIC_CHUNK_SAMPLES, (pcm, rms) =>
        this.port.postMessage({ pcm, rms }, [pcm.buffer]),
      );
    }

    process(inputs) {
      const channel = inputs[0] && inputs[0][0];
      if (channel) this.resampler.push(channel);
      return true; // keep running while the page holds the node
    }
  }
  registerProcessor(MIC_PROCESSOR, MicProcessor);
}

// ---------------------------------------------------------------------------------------------------------------
// The page.

const $ = (id) => document.getElementById(id);

/** Everything the page knows, exposed as globalThis.chorusPlayground for tests (plain data, except ws/audio). */
const state = {
  ws: null,
  audioContext: null,
  nextStartTime: 0, // where the next buffer starts: the end of the previous one (back to back)
  sources: new Set(),
  current: null, // the response in flight (the server runs at most one per session)
  playing: null, // the response whose audio is scheduled (it may have finished generating long before)
  responses: [],
  events: [], // server events seen, deltas left out (they are counted in eventCounts)
  eventCounts: {},
  truncations: [], // conversation.item.truncate sent: {itemId, responseId, audioEndMs, answered}
  pipeline: { loaded: false, audioInput: false, imageInput: false },
  mic: { on: false, state: 'off', level: 0, chunksSent: 0, msSent: 0, error: null },
  lastSpeechStoppedAt: null, // performance.now() of the last speech_stopped: an automatic answer's t0
  micModuleLoaded: false, // this script added to the AudioContext as its worklet module
};
let micNodes = null; // {stream, source, node, sink}: kept off `state` so tests can read state as data
let scriptUrl = '/playground.js';

function authHeaders() {
  const key = $('apiKey').value.trim();
  return key ? { authorization: `Bearer ${key}` } : {};
}

function setStatus(text) {
  $('status').textContent = text;
}

/** One line in the event log (newest last, the list scrolled to it), capped. */
function logLine(type, text) {
  const list = $('events');
  const li = document.createElement('li');
  li.dataset.type = type;
  li.textContent = `${(performance.now() / 1000).toFixed(2)} s  ${type}${text ? `  ${text}` : ''}`;
  list.append(li);
  while (list.children.length > EVENT_LOG_LINES) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

function maxTokens() {
  const n = Number.parseInt($('maxTokens').value, 10);
  return Number.isFinite(n) && n >= 1 ? n : DEFAULT_MAX_TOKENS;
}

function outputModalities() {
  return [$('audio').checked ? 'audio' : 'text'];
}

// ---------------------------------------------------------------------------------------------------------------
// The stage graph: /v1/stages drawn as a layered DAG (SVG built node by node; no library, no innerHTML).

const SVG_NS = 'http://www.w3.org/2000/svg';
const NODE_W = 172;
const NODE_H = 54;
const COL_GAP = 56;
const ROW_GAP = 12;
const PAD = 4;

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (parent) parent.append(el);
  return el;
}

/**
 * Columns of the DAG: a stage sits one column right of its deepest input, so stages with no inputs (encoders, which
 * read media from the request, and an encoder-less Thinker) share column 0 and run side by side. Within a column,
 * stages keep the graph's (topological) order.
 */
function layers(stages, edges) {
  const ids = new Set(stages.map((s) => s.stage_id));
  const inputs = new Map(stages.map((s) => [s.stage_id, []]));
  for (const e of edges) if (ids.has(e.from) && inputs.has(e.to)) inputs.get(e.to).push(e.from);
  const depth = new Map();
  const visit = (id, path) => {
    if (depth.has(id)) return depth.get(id);
    if (path.has(id)) return 0; // a cycle (config validation refuses one): drawn anyway, never looped on
    path.add(id);
    const d = inputs.get(id).reduce((m, from) => Math.max(m, visit(from, path) + 1), 0);
    path.delete(id);
    depth.set(id, d);
    return d;
  };
  const columns = [];
  for (const s of stages) {
    const d = visit(s.stage_id, new Set());
    (columns[d] = columns[d] || []).push(s);
  }
  return Array.from(columns, (c) => c || []);
}

/** A stage's status over its replicas: ready only when every replica is. */
function stageStatus(health, stageId) {
  const replicas = health.filter((h) => h.stage_id === stageId);
  if (replicas.length === 0) return 'unknown';
  const unready = replicas.find((h) => h.status !== 'ready');
  return unready ? unready.status : 'ready';
}

function drawGraph(graph) {
  const columns = layers(graph.stages, graph.edges || []);
  const rows = Math.max(1, ...columns.map((c) => c.length));
  const width = 2 * PAD + columns.length * NODE_W + Math.max(0, columns.length - 1) * COL_GAP;
  const height = 2 * PAD + rows * NODE_H + (rows - 1) * ROW_GAP;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'group' });
  root.setAttribute('aria-label', 'stage graph');
  const marker = svg('marker', {
    id: 'arrow',
    viewBox: '0 0 10 10',
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: 'auto',
  });
  svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }, marker);
  svg('defs', {}, root).append(marker);

  const at = new Map(); // stage_id -> {x, y, layer}
  columns.forEach((column, layer) => {
    const top = (height - (column.length * NODE_H + (column.length - 1) * ROW_GAP)) / 2;
    column.forEach((s, row) =>
      at.set(s.stage_id, { x: PAD + layer * (NODE_W + COL_GAP), y: top + row * (NODE_H + ROW_GAP), layer }),
    );
  });

  // Edges first, so nodes are drawn over their ends.
  for (const e of graph.edges || []) {
    const from = at.get(e.from);
    const to = at.get(e.to);
    if (!from || !to) continue;
    const x1 = from.x + NODE_W;
    const y1 = from.y + NODE_H / 2;
    const x2 = to.x - 1;
    const y2 = to.y + NODE_H / 2;
    const bend = (x2 - x1) / 2;
    const path = svg('path', {
      class: 'edge',
      d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
      'marker-end': 'url(#arrow)',
      'data-from': e.from,
      'data-to': e.to,
    });
    svg('title', {}, path).textContent = `${e.from} → ${e.to} (${e.kind || e.connector})`;
    root.append(path);
  }

  const health = graph.health || [];
  for (const column of columns) {
    for (const s of column) {
      const { x, y, layer } = at.get(s.stage_id);
      const status = stageStatus(health, s.stage_id);
      const g = svg('g', { class: 'stage', transform: `translate(${x},${y})` }, root);
      g.dataset.stageId = s.stage_id;
      g.dataset.kind = s.kind;
      g.dataset.layer = String(layer);
      g.dataset.status = status;
      if (s.modality) g.dataset.modality = s.modality;
      svg('rect', { width: NODE_W, height: NODE_H, rx: 6 }, g);
      svg('text', { x: 10, y: 18, class: 'name' }, g).textContent = s.stage_id;
      const what = [];
      if (s.kind !== s.stage_id) what.push(s.kind);
      if (s.modality) what.push(s.modality);
      what.push(s.placement === 'remote' ? 'remote' : `${s.replicas} replica${s.replicas === 1 ? '' : 's'}`);
      svg('text', { x: 10, y: 33, class: 'detail' }, g).textContent = what.join(' · ');
      svg('text', { x: 10, y: 47, class: 'detail status' }, g).textContent = status;
      svg('title', {}, g).textContent = `${s.stage_id}: ${what.join(', ')}; ${status}`;
    }
  }
  return root;
}

async function loadStages() {
  const box = $('stages');
  try {
    const res = await fetch('/v1/stages', { headers: authHeaders() });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const graph = await res.json();
    box.textContent = '';
    box.append(drawGraph(graph));
    $('graphMode').textContent = graph.async_chunk ? 'async_chunk on' : 'async_chunk off';
    const encoders = graph.stages.filter((s) => s.kind === 'encoder');
    state.pipeline = {
      loaded: true,
      audioInput: encoders.some((s) => s.modality === 'audio'),
      imageInput: encoders.some((s) => s.modality === 'image'),
    };
  } catch (err) {
    box.textContent = `could not load the stage graph: ${err.message}`;
    state.pipeline = { loaded: false, audioInput: false, imageInput: false };
  }
  updateInputControls();
}

/** The microphone and image attach exist only for pipelines that can take them; a disabled control says why. */
function updateInputControls() {
  const p = state.pipeline;
  let micBlocked = null;
  if (!p.loaded) micBlocked = 'the stage graph did not load (check the API key)';
  else if (!p.audioInput)
    micBlocked = 'this pipeline has no audio encoder, so it cannot take speech (serve configs/tiny-omni.yaml)';
  else if (!window.isSecureContext || !navigator.mediaDevices || !window.AudioWorkletNode)
    micBlocked = 'the microphone needs a secure context: open the page over https or from localhost';
  const mic = $('mic');
  if (!state.mic.on) mic.disabled = micBlocked !== null;
  const micTitle = micBlocked ? `Microphone unavailable: ${micBlocked}` : 'Talk: server VAD finds your turns';
  $('micWrap').title = micTitle; // on the wrapper too: a disabled button shows no tooltip in some browsers
  mic.title = micTitle;
  $('micNote').textContent = micBlocked && p.loaded ? `mic off: ${micBlocked}` : '';

  const image = $('image');
  image.disabled = !p.imageInput;
  image.title = p.imageInput
    ? 'attach a PNG or JPEG to the next message'
    : 'this pipeline has no image encoder, so it cannot take images';
  $('imageLabel').title = image.title;
}

// ---------------------------------------------------------------------------------------------------------------
// The realtime connection and its events.

/** The socket once open (it may be opening already: the mic and Send can both ask at once). */
function opened(ws) {
  if (ws.readyState === WebSocket.OPEN) return Promise.resolve(ws);
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => resolve(ws), { once: true });
    ws.addEventListener('error', () => reject(new Error('could not connect to /v1/realtime')), { once: true });
  });
}

function connect() {
  if (state.ws && state.ws.readyState <= WebSocket.OPEN) return opened(state.ws);
  const key = $('apiKey').value.trim();
  const protocols = key ? ['realtime', `openai-insecure-api-key.${key}`] : ['realtime'];
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/realtime`;
  const ws = new WebSocket(url, protocols);
  state.ws = ws;
  ws.onmessage = (msg) => onServerEvent(JSON.parse(msg.data));
  ws.onclose = () => {
    if (state.ws === ws) state.ws = null;
    setStatus('disconnected');
    if (state.mic.on) stopMic('the connection closed');
  };
  return opened(ws);
}

function sendEvent(event) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(event));
  return true;
}

function newResponse(source, sentAt) {
  const r = {
    id: null,
    itemId: null, // the assistant item (conversation.item.truncate names it)
    source, // 'text': Send; 'voice': an automatic answer to a turn the server VAD found
    status: 'in_progress',
    reason: null, // status_details.reason of response.done
    usage: null,
    text: '',
    ttftMs: null,
    ttfpMs: null,
    audioSamples: 0,
    underruns: 0,
    schedule: [],
    sentAt,
    cancelled: false, // no more audio is played (Cancel, or the user spoke over it)
    interrupted: false, // the user spoke over its playback (barge-in)
    playedMs: null, // how much of its audio was heard when it was interrupted
    createEventId: null,
    row: null,
  };
  state.responses.push(r);
  return r;
}

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

function responseFor(e) {
  const id = e.response_id || (e.response && e.response.id);
  if (!id) return null;
  for (let i = state.responses.length - 1; i >= 0; i--) if (state.responses[i].id === id) return state.responses[i];
  return null;
}

function onServerEvent(e) {
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

function row(r) {
  if (!r.id) return;
  if (!r.row) {
    r.row = document.createElement('tr');
    r.row.dataset.responseId = r.id;
    $('responses').prepend(r.row);
  }
  const detail = [r.reason || '', r.playedMs !== null ? `heard ${(r.playedMs / 1000).toFixed(2)} s` : '']
    .filter(Boolean)
    .join(', ');
  const cells = [
    r.id,
    r.status,
    fmt(r.ttftMs),
    fmt(r.ttfpMs),
    (r.audioSamples / SAMPLE_RATE_HZ).toFixed(2),
    String(r.underruns),
    r.source,
    detail,
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

// ---------------------------------------------------------------------------------------------------------------
// Playback, and barge-in on the client side.

function ensureAudio() {
  if (!state.audioContext) state.audioContext = new AudioContext();
  if (state.audioContext.state === 'suspended') void state.audioContext.resume();
  return state.audioContext;
}

function base64ToBytes(base64) {
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/** Schedules one pcm16 chunk right where the previous one ends, so playback has no gaps. */
function playChunk(base64, r) {
  const ctx = ensureAudio();
  if (state.playing !== r) {
    stopAudio(); // another response's audio: a new answer replaces what is left of the old one
    state.playing = r;
  }
  const bytes = base64ToBytes(base64);
  const view = new DataView(bytes.buffer);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  const buffer = ctx.createBuffer(1, samples.length, SAMPLE_RATE_HZ);
  buffer.copyToChannel(samples, 0);
  const source = ctx.createBufferSource();
  source.buffer = buffer;
  source.connect(ctx.destination);
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

/** True while scheduled audio has not finished playing. */
function audioPlaying() {
  const ctx = state.audioContext;
  return ctx !== null && state.sources.size > 0 && state.nextStartTime > ctx.currentTime;
}

/**
 * Seconds of `r`'s audio the listener has heard: the context time now at the speakers (output latency taken
 * off when the browser reports it) laid over the buffers as scheduled, so gaps from underruns do not count.
 */
function heardSeconds(r) {
  const ctx = state.audioContext;
  const stamp = typeof ctx.getOutputTimestamp === 'function' ? ctx.getOutputTimestamp() : null;
  const now = stamp && stamp.contextTime > 0 ? stamp.contextTime : ctx.currentTime;
  let heard = 0;
  for (const s of r.schedule) heard += Math.max(0, Math.min(s.duration, now - s.start));
  return heard;
}

/**
 * The user spoke. If an answer is playing, it stops at once, and the server learns how much of it was heard
 * (conversation.item.truncate), so the next turn's context holds only what the user heard. The server cancels the
 * response itself when it is still generating (interrupt_response); this covers audio already received too.
 */
function onSpeechStarted(e) {
  setVoice('speaking');
  logLine(e.type, `at ${e.audio_start_ms} ms`);
  const r = state.playing;
  if (!r || r.interrupted || !audioPlaying()) return;
  const playedMs = Math.floor(heardSeconds(r) * 1000);
  stopAudio();
  r.cancelled = true;
  r.interrupted = true;
  r.playedMs = playedMs;
  row(r);
  if (
    r.itemId &&
    sendEvent({ type: 'conversation.item.truncate', item_id: r.itemId, content_index: 0, audio_end_ms: playedMs })
  ) {
    state.truncations.push({ itemId: r.itemId, responseId: r.id, audioEndMs: playedMs, answered: false });
    logLine('conversation.item.truncate', `${r.itemId} at ${playedMs} ms (sent)`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The microphone: getUserMedia -> AudioWorklet (resampled to 24 kHz pcm16) -> input_audio_buffer.append.

function setVoice(voiceState) {
  state.mic.state = voiceState;
  const el = $('voice');
  el.dataset.state = voiceState;
  el.textContent = { off: 'mic off', listening: 'listening…', speaking: 'you are speaking' }[voiceState];
}

/** session.update for voice turns: server VAD answers each turn and lets the user interrupt an answer. */
function voiceSessionUpdate(on) {
  return {
    type: 'session.update',
    session: {
      type: 'realtime',
      output_modalities: outputModalities(),
      max_output_tokens: maxTokens(),
      audio: {
        input: {
          turn_detection: on ? { type: 'server_vad', create_response: true, interrupt_response: true } : null,
        },
      },
    },
  };
}

/** Little-endian pcm16 to base64 (typed arrays use the platform's byte order, little-endian on every browser). */
function pcmToBase64(pcm) {
  const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function onMicChunk(pcm, rms) {
  if (!state.mic.on) return;
  state.mic.level = rms;
  // The meter in dBFS over a 60 dB range: quiet room near 0, speech around the middle, clipping at the top.
  const db = 20 * Math.log10(Math.max(rms, 1e-6));
  $('level').value = Math.max(0, Math.min(1, (db + 60) / 60));
  if (sendEvent({ type: 'input_audio_buffer.append', audio: pcmToBase64(pcm) })) {
    state.mic.chunksSent++;
    state.mic.msSent += MIC_CHUNK_MS;
  }
}

async function startMic() {
  const ctx = ensureAudio(); // inside the click, so autoplay policies let it run
  const button = $('mic');
  button.disabled = true;
  state.mic.error = null;
  let stream = null;
  try {
    await connect();
    stream = await navigator.mediaDevices.getUserMedia({
      // Echo cancellation keeps the answer coming out of the speakers from being heard as the user (barge-in).
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    if (!state.micModuleLoaded) {
      await ctx.audioWorklet.addModule(scriptUrl);
      state.micModuleLoaded = true;
    }
    const source = ctx.createMediaStreamSource(stream);
    const node = new AudioWorkletNode(ctx, MIC_PROCESSOR, {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      channelCount: 1,
      channelCountMode: 'explicit', // the graph downmixes to mono before the processor sees it
    });
    // A node nothing pulls may never be processed: route it to the speakers through a muted gain.
    const sink = ctx.createGain();
    sink.gain.value = 0;
    node.connect(sink).connect(ctx.destination);
    node.port.onmessage = (m) => onMicChunk(m.data.pcm, m.data.rms);
    sendEvent(voiceSessionUpdate(true)); // before the first append, so the VAD hears the turn from its start
    micNodes = { stream, source, node, sink };
    state.mic.on = true;
    source.connect(node);
    button.setAttribute('aria-pressed', 'true');
    button.textContent = 'Stop mic';
    setVoice('listening');
    logLine('mic', 'on (server_vad)');
  } catch (err) {
    if (stream && !micNodes) for (const track of stream.getTracks()) track.stop(); // the browser's mic light off
    state.mic.error = err.message;
    setStatus(`microphone: ${err.message}`);
    logLine('mic', `failed: ${err.message}`);
  } finally {
    button.disabled = false;
  }
}

function stopMic(why) {
  if (micNodes) {
    micNodes.node.port.onmessage = null;
    micNodes.source.disconnect();
    micNodes.node.disconnect();
    micNodes.sink.disconnect();
    for (const track of micNodes.stream.getTracks()) track.stop();
    micNodes = null;
  }
  if (state.mic.on) {
    // Turn detection off, and the half-spoken turn (if any) dropped rather than committed later.
    sendEvent(voiceSessionUpdate(false));
    sendEvent({ type: 'input_audio_buffer.clear' });
  }
  state.mic.on = false;
  state.mic.level = 0;
  $('level').value = 0;
  const button = $('mic');
  button.setAttribute('aria-pressed', 'false');
  button.textContent = 'Start mic';
  setVoice('off');
  logLine('mic', why ? `off: ${why}` : 'off');
  updateInputControls();
}

// ---------------------------------------------------------------------------------------------------------------
// Send (text and an optional image), cancel.

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

async function send() {
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

function cancel() {
  const r = state.current;
  if (!r || !state.ws) return;
  r.cancelled = true;
  stopAudio();
  sendEvent({ type: 'response.cancel' });
  setStatus('cancelling');
}

async function showPreview() {
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
function onSessionControlsChanged() {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
  sendEvent({
    type: 'session.update',
    session: { type: 'realtime', output_modalities: outputModalities(), max_output_tokens: maxTokens() },
  });
}

function startPage() {
  if (document.currentScript) scriptUrl = document.currentScript.src;
  globalThis.chorusPlayground = state;
  $('send').addEventListener('click', () => void send());
  $('cancel').addEventListener('click', cancel);
  $('mic').addEventListener('click', () => (state.mic.on ? stopMic() : void startMic()));
  $('image').addEventListener('change', () => void showPreview());
  $('maxTokens').addEventListener('change', onSessionControlsChanged);
  $('audio').addEventListener('change', onSessionControlsChanged);
  $('apiKey').addEventListener('change', () => {
    if (state.mic.on) stopMic('the API key changed');
    if (state.ws) state.ws.close();
    state.ws = null;
    void loadStages();
  });
  void loadStages();
}

if (typeof registerProcessor === 'function') registerMicProcessor();
else startPage();
