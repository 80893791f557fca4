// The waterfall of one answer: its trace from the server's trace buffer (chorus serve --trace-buffer N, GET
// /v1/traces) drawn as a timeline, one lane per process (main, thinker#0, talker#0...), its spans as bars (the stage
// span, queue wait, prefill / decode / run steps, chunk hops) and markers for the answer's first text and first audio,
// and this page's audio underruns. SVG built node by node from server data (setAttribute / textContent only).
import { $, authHeaders, state } from './page.js';
import { svg } from './svg.js';

const WIDTH = 960;
const LABEL_W = 120;
const ROW_H = 14;
const LANE_PAD = 6;
const AXIS_H = 28;
const LEGEND_H = 22;
/** Spans arrive a little after the answer's done (each process exports every ~250 ms): ask again until it settles. */
const POLL_MS = 300;
const POLL_TRIES = 15;

// A span's sub-row in its lane: 0 the stage (or the answer's root), 1 queue and steps, 2 chunk hops.
const ROW_OF = { queue: 1, 'prefill step': 1, 'decode step': 1, 'run step': 1, 'chunk hop': 2 };
const COLOR_OF = {
  queue: '#b0b4bc',
  'prefill step': '#3b7dd8',
  'decode step': '#3fa365',
  'run step': '#e08a2c',
  'chunk hop': '#8a5cc7',
};
const MARKERS = { first_text: '#1d4fa0', first_audio: '#b3261e' };

async function getJson(path) {
  const res = await fetch(path, { headers: authHeaders() });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error((body && body.error && body.error.message) || `HTTP ${res.status}`);
  return body;
}

/** The answer's root span (main's, with its request id) and every span under it; the trace's other answers left out. */
function answerSpans(spans, requestId) {
  const root = spans.find((s) => s.attributes['chorus.protocol'] && s.attributes['chorus.request_id'] === requestId);
  if (!root) return null;
  const children = new Map();
  for (const s of spans) {
    if (!children.has(s.parentSpanId)) children.set(s.parentSpanId, []);
    children.get(s.parentSpanId).push(s);
  }
  const out = [];
  const visit = (s) => {
    out.push(s);
    for (const c of children.get(s.spanId) || []) visit(c);
  };
  visit(root);
  return { root, spans: out };
}

async function fetchAnswer(requestId) {
  let previous = -1;
  let found = null;
  for (let i = 0; i < POLL_TRIES; i++) {
    const list = await getJson(`/v1/traces?request_id=${encodeURIComponent(requestId)}`);
    if (list.data.length > 0) {
      const trace = await getJson(`/v1/traces/${encodeURIComponent(list.data[0].traceId)}`);
      found = answerSpans(trace.spans, requestId);
      // Settled: the root is in, and the last poll brought nothing new.
      if (found && found.spans.length === previous) return found;
      previous = found ? found.spans.length : -1;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  if (found) return found;
  throw new Error(`no trace of ${requestId} in the server's buffer (evicted, or not sampled)`);
}

/**
 * Lanes: main first, then the processes in the order they first worked on the answer (their first step), which is the
 * pipeline's order; not the order of their stage spans, since every stage admits the request at once.
 */
function lanesOf(spans) {
  const lanes = new Map();
  for (const s of [...spans].sort((a, b) => a.startMs - b.startMs)) {
    if (!lanes.has(s.instance)) lanes.set(s.instance, []);
    lanes.get(s.instance).push(s);
  }
  const firstWork = (laneSpans) => {
    const step = laneSpans.find((s) => s.name.endsWith(' step'));
    return (step || laneSpans[0]).startMs;
  };
  return [...lanes.entries()].sort(([a, sa], [b, sb]) =>
    a === 'main' ? -1 : b === 'main' ? 1 : firstWork(sa) - firstWork(sb),
  );
}

function tooltip(s) {
  const attrs = Object.entries(s.attributes)
    .filter(([k]) => k !== 'chorus.request_id')
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`);
  return [`${s.name} ${(s.endMs - s.startMs).toFixed(1)} ms`, ...attrs].join('\n');
}

function draw(answer, underrunsAtMs) {
  const { root, spans } = answer;
  const t0 = root.startMs;
  const t1 = Math.max(...spans.map((s) => s.endMs), ...underrunsAtMs);
  const scale = (WIDTH - LABEL_W - 10) / Math.max(t1 - t0, 1);
  const x = (ms) => LABEL_W + (ms - t0) * scale;
  const lanes = lanesOf(spans);
  if (underrunsAtMs.length > 0) lanes.push(['playground', []]);
  const laneH = 3 * ROW_H + 2 * LANE_PAD;
  const legendTop = AXIS_H + lanes.length * laneH;
  const height = legendTop + LEGEND_H;
  const chart = svg('svg', { width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, role: 'img' });
  svg('title', {}, chart).textContent = `trace ${root.traceId}`;
  lanes.forEach(([instance, laneSpans], i) => {
    const top = AXIS_H + i * laneH;
    const lane = svg('g', { class: 'lane', 'data-instance': instance }, chart);
    svg('rect', { x: 0, y: top, width: WIDTH, height: laneH, fill: i % 2 ? '#f6f7f9' : '#fff' }, lane);
    svg('text', { x: 4, y: top + laneH / 2 + 4, 'font-size': 12 }, lane).textContent = instance;
    for (const s of laneSpans) {
      const row = ROW_OF[s.name] ?? 0;
      const bar = svg(
        'rect',
        {
          class: 'bar',
          'data-name': s.name,
          'data-start-ms': (s.startMs - t0).toFixed(3),
          'data-end-ms': (s.endMs - t0).toFixed(3),
          x: x(s.startMs),
          y: top + LANE_PAD + row * ROW_H + 1,
          width: Math.max((s.endMs - s.startMs) * scale, 1.5),
          height: ROW_H - 2,
          fill: s.error ? '#d93025' : (COLOR_OF[s.name] ?? '#cfd6e4'),
        },
        lane,
      );
      svg('title', {}, bar).textContent = tooltip(s);
    }
    if (instance === 'playground')
      for (const at of underrunsAtMs)
        svg(
          'line',
          { class: 'marker', 'data-event': 'underrun', x1: x(at), x2: x(at), y1: top, y2: top + laneH },
          lane,
        ).setAttribute('stroke', '#d93025');
  });
  // The time grid over the lanes (their backgrounds would hide it), dashed so the bars still read through it.
  for (let i = 0; i <= 4; i++) {
    const ms = ((t1 - t0) * i) / 4;
    const at = x(t0 + ms);
    svg('line', { x1: at, x2: at, y1: AXIS_H - 6, y2: legendTop, stroke: '#c9cdd6', 'stroke-dasharray': '2 4' }, chart);
    const label = svg('text', { x: at, y: 12, 'font-size': 11, 'text-anchor': i === 0 ? 'start' : 'end' }, chart);
    label.textContent = `${ms.toFixed(0)} ms`;
  }
  legend(chart, legendTop);
  for (const e of root.events) {
    if (!MARKERS[e.name]) continue;
    const marker = svg('g', { class: 'marker', 'data-event': e.name, 'data-at-ms': (e.atMs - t0).toFixed(3) }, chart);
    svg('line', { x1: x(e.atMs), x2: x(e.atMs), y1: AXIS_H - 8, y2: legendTop, stroke: MARKERS[e.name] }, marker);
    svg('text', { x: x(e.atMs) + 3, y: AXIS_H - 2, 'font-size': 11, fill: MARKERS[e.name] }, marker).textContent =
      `${e.name.replace('_', ' ')} ${(e.atMs - t0).toFixed(0)} ms`;
  }
  return { chart, lanes: lanes.map(([instance]) => instance) };
}

/** What the colours mean, under the lanes (the stage span itself is the pale bar above them). */
function legend(chart, top) {
  let left = LABEL_W;
  for (const [name, fill] of Object.entries(COLOR_OF)) {
    svg('rect', { x: left, y: top + 6, width: 10, height: 10, fill }, chart);
    const label = svg('text', { x: left + 14, y: top + 15, 'font-size': 11 }, chart);
    label.textContent = name;
    left += 24 + 7 * name.length;
  }
}

/** Loads and draws the trace of response `r` (its id is the request id main's root span carries). */
export async function showWaterfall(r) {
  const box = $('waterfall');
  const caption = $('waterfallCaption');
  state.waterfall = { responseId: r.id, status: 'loading', traceId: null, lanes: [], error: null };
  caption.textContent = `loading the trace of ${r.id}…`;
  box.textContent = '';
  try {
    const answer = await fetchAnswer(r.id);
    const { chart, lanes } = draw(answer, r.underrunsAtMs || []);
    box.append(chart);
    state.waterfall = { responseId: r.id, status: 'drawn', traceId: answer.root.traceId, lanes, error: null };
    caption.textContent = `${r.id}: trace ${answer.root.traceId}, ${answer.spans.length} spans`;
  } catch (err) {
    state.waterfall = { responseId: r.id, status: 'failed', traceId: null, lanes: [], error: err.message };
    caption.textContent = `no waterfall for ${r.id}: ${err.message}`;
  }
}
