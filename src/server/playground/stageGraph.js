// The stage graph: /v1/stages drawn as a layered DAG (SVG built node by node; no library, no innerHTML).
import { svg } from './svg.js';

const NODE_W = 172;
const NODE_H = 54;
const COL_GAP = 56;
const ROW_GAP = 12;
const PAD = 4;

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

export function drawGraph(graph) {
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
