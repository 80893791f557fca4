// The responses this page follows: one record each (what tests read through globalThis.chorusPlayground), and its
// row in the responses table.
import { SAMPLE_RATE_HZ } from './pcm16.js';
import { $, state } from './page.js';
import { showWaterfall } from './waterfall.js';

export function newResponse(source, sentAt) {
  const r = {
    id: null,
    itemId: null, // the assistant item (conversation.item.truncate names it)
    source, // 'text': Send; 'voice': an automatic answer to a turn the server VAD found; 'commit': Send speech
    status: 'in_progress',
    reason: null, // status_details.reason of response.done
    errorMessage: null, // why it failed or was refused
    usage: null,
    maxOutputTokens: null, // the cap response.done says it ran with
    serverLatency: null, // response.done's chorus_latency, when the server sends it
    turn: null, // its entry in state.turns
    text: '',
    ttftMs: null,
    ttfpMs: null,
    audioSamples: 0,
    underruns: 0,
    underrunsAtMs: [], // when each underrun happened (epoch ms), for the waterfall
    schedule: [],
    sentAt, // t0 of TTFT and TTFP (performance.now()): Send, speech_stopped, or Send speech
    cancelled: false, // no more audio is played (Cancel, or the user spoke over it)
    interrupted: false, // the user spoke over its playback (barge-in)
    playedMs: null, // how much of its audio was heard when it was interrupted
    createEventId: null,
    row: null,
  };
  state.responses.push(r);
  return r;
}

export function responseFor(e) {
  const id = e.response_id || (e.response && e.response.id);
  if (!id) return null;
  for (let i = state.responses.length - 1; i >= 0; i--) if (state.responses[i].id === id) return state.responses[i];
  return null;
}

export function row(r) {
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
    serverFigures(r.serverLatency),
  ];
  r.row.textContent = '';
  for (const text of cells) {
    const td = document.createElement('td');
    td.textContent = text;
    r.row.append(td);
  }
  const td = document.createElement('td');
  const button = document.createElement('button');
  button.className = 'showWaterfall';
  button.textContent = 'waterfall';
  button.title = "draw this answer's trace (the server keeps the last ones with --trace-buffer N)";
  button.addEventListener('click', () => void showWaterfall(r));
  td.append(button);
  r.row.append(td);
}

function fmt(ms) {
  return ms === null || ms === undefined ? '–' : ms.toFixed(1);
}

function serverFigures(latency) {
  return latency ? `${fmt(latency.ttft_ms)} / ${fmt(latency.ttfp_ms)}` : '–';
}

/** A new session: its responses start from none. */
export function clearResponses() {
  state.responses = [];
  $('responses').textContent = '';
}
