/**
 * The project's import graph and the rules it must keep: folders are layered, a file imports only from its own
 * layer or below, the floor (src/common) imports nothing of the project, peers of one rank stay apart, walls hold
 * (a layer that may import another by rank reaches it only through its public files), and no module cycle exists.
 * Read with TypeScript's own scanner, so type-only and dynamic imports count.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';

export interface Layer {
  /** A folder or file; `*` stands for any one path segment (`stages/*`: every folder and file under stages/). */
  readonly prefix: string;
  readonly rank: number;
  /** Entries with one name are one layer (they import each other freely); the prefix by default. */
  readonly name?: string;
}

/** Lowest first. A file belongs to the longest prefix it matches. */
export const CHORUS_LAYERS: readonly Layer[] = [
  { prefix: 'src/common', rank: 0 },
  { prefix: 'src/media', rank: 1 },
  { prefix: 'src/sched', rank: 1 },
  { prefix: 'src/tokenizer', rank: 1 },
  // Grammar-constrained decoding: over the tokenizer, below the stages that sample under it and main that checks it.
  { prefix: 'src/grammar', rank: 1.5 },
  { prefix: 'transport', rank: 1 },
  // The model code the kinds share: ONNX sessions and KV caches, sampling, the graph builder and presets.
  { prefix: 'stages/models', rank: 2, name: 'stages (model code)' },
  { prefix: 'stages/sampling', rank: 2, name: 'stages (model code)' },
  { prefix: 'stages/generator', rank: 2, name: 'stages (model code)' },
  { prefix: 'stages/types.ts', rank: 2, name: 'stages (model code)' },
  { prefix: 'src/voice', rank: 2 },
  { prefix: 'src/tracing', rank: 2 },
  { prefix: 'src/worker', rank: 3 },
  // Implements the worker's ControlChannel (ipc, and the plane for other machines: membership, leases, heartbeats,
  // its engines); the supervisors above pick a variant.
  { prefix: 'src/control', rank: 3.5 },
  // The stage kinds: one folder each (descriptor, protocol, core, runner, model builder, the processors that feed
  // it) and the kind-neutral files at stages/'s root (registry, descriptor type, the stage process's entry).
  { prefix: 'stages/*', rank: 4, name: 'stages (kinds)' },
  // Builds each kind's generated model by kind name (a descriptor's job, by the kinds step's end).
  { prefix: 'stages/models/ensureModel.ts', rank: 4, name: 'stages (kinds)' },
  { prefix: 'src/config', rank: 5 },
  { prefix: 'src/engine', rank: 6 },
  { prefix: 'src/server', rank: 7 },
  // The public entry (package.json `exports`: `chorus` and its light half `chorus/basics`): names what an embedder
  // and the bench may use, from any layer below.
  { prefix: 'src/index.ts', rank: 7.5, name: 'the public entry' },
  { prefix: 'src/basics.ts', rank: 7.5, name: 'the public entry' },
  { prefix: 'bench', rank: 8 },
  { prefix: 'src/cli', rank: 9 },
  // Tests may import any layer; nothing may import them (the bench included: it ships with the CLI).
  { prefix: 'test', rank: 10 },
];

/** `from` may import `to` only through `through` (none: not at all), though its rank would allow more. */
export interface Wall {
  readonly from: string;
  readonly to: string;
  readonly through: readonly string[];
}

export const CHORUS_WALLS: readonly Wall[] = [
  // The engine drives stages through workers and the kind registry (what it needs of a kind is a descriptor property)
  // and tells them request events; what it shares with them (tokenizer, media) lives in src/. It names no kind.
  {
    from: 'src/engine',
    to: 'stages',
    through: ['stages/registry.ts', 'stages/StageKindDescriptor.ts', 'stages/requestEvents.ts'],
  },
  // The transport's internals (rings, Redis clients, the adapter) change without touching the engine.
  { from: 'src/engine', to: 'transport', through: ['transport/registry.ts', 'transport/Connector.ts'] },
  // The control plane's engine (Redis today), membership, leases and heartbeats stay behind one door.
  { from: 'src/engine', to: 'src/control', through: ['src/control/ControlPlane.ts', 'src/control/ipc/ipcChannel.ts'] },
  // The Realtime session uses voice through one small interface; the VAD's model, threads and turn rules stay inside.
  { from: 'src/server', to: 'src/voice', through: ['src/voice/index.ts'] },
  // The front end drives the engine through the Engine interface (src/common/engine.ts), never its internals.
  { from: 'src/server', to: 'src/engine', through: [] },
  // The bench is a client of the package: what it measures, it reaches through the public entry, as a user would.
  { from: 'bench', to: 'src', through: ['src/index.ts', 'src/basics.ts'] },
  { from: 'bench', to: 'stages', through: [] },
  { from: 'bench', to: 'transport', through: [] },
  // The CLI's bench and soak commands are doors: the bench's own command modules parse their flags and run them.
  { from: 'src/cli', to: 'bench', through: ['bench/cli/bench.ts', 'bench/cli/soak.ts'] },
];

export interface ImportEdge {
  readonly from: string;
  readonly to: string;
  readonly line: number;
}

export type Rule =
  'upward import' | 'floor imports nothing' | 'peer import' | 'walled import' | 'circular import' | 'unlayered file';

export interface Violation {
  readonly rule: Rule;
  readonly message: string;
}

function listTs(root: string, dir: string, out: string[]): void {
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) listTs(root, rel, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
}

/** Every .ts file under `folders` and every relative module reference between them. */
export function readImportGraph(rootDir: string, folders: readonly string[]): { files: string[]; edges: ImportEdge[] } {
  const files: string[] = [];
  for (const folder of folders) listTs(rootDir, folder, files);
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(rootDir, file), 'utf8');
    const info = ts.preProcessFile(text, true, true);
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith('.')) continue; // a package
      const to = normalize(join(dirname(file), ref.fileName));
      const line = text.slice(0, ref.pos).split('\n').length;
      edges.push({ from: file, to: relative('.', to), line });
    }
  }
  return { files, edges };
}

const within = (file: string, prefix: string) => file === prefix || file.startsWith(`${prefix}/`);

function wallOf(e: ImportEdge, walls: readonly Wall[]): Wall | undefined {
  return walls.find((w) => within(e.from, w.from) && within(e.to, w.to) && !w.through.includes(e.to));
}

function matches(file: string, prefix: string): boolean {
  const f = file.split('/');
  const p = prefix.split('/');
  return p.length <= f.length && p.every((seg, i) => seg === '*' || seg === f[i]);
}

function layerOf(file: string, layers: readonly Layer[]): Layer | null {
  let best: Layer | null = null;
  for (const l of layers) {
    if (matches(file, l.prefix) && (!best || l.prefix.length > best.prefix.length)) best = l;
  }
  return best;
}

const nameOf = (l: Layer) => l.name ?? l.prefix;

export function checkImportGraph(
  edges: readonly ImportEdge[],
  files: readonly string[],
  layers: readonly Layer[] = CHORUS_LAYERS,
  walls: readonly Wall[] = CHORUS_WALLS,
): Violation[] {
  const out: Violation[] = [];
  for (const file of files) {
    if (!layerOf(file, layers)) out.push({ rule: 'unlayered file', message: `unlayered file: ${file} has no layer` });
  }
  for (const e of edges) {
    const wall = wallOf(e, walls);
    if (wall) {
      const allowed = wall.through.length ? `only through ${wall.through.join(', ')}` : 'not at all';
      const message = `walled import: ${e.from}:${e.line} imports ${e.to} (${wall.from} reaches ${wall.to} ${allowed})`;
      out.push({ rule: 'walled import', message });
    }
    const a = layerOf(e.from, layers);
    const b = layerOf(e.to, layers);
    if (!a || !b || nameOf(a) === nameOf(b)) continue;
    const where = `${e.from}:${e.line} (${nameOf(a)}, rank ${a.rank}) imports ${e.to} (${nameOf(b)}, rank ${b.rank})`;
    if (a.rank === 0) out.push({ rule: 'floor imports nothing', message: `floor imports nothing: ${where}` });
    else if (b.rank > a.rank) out.push({ rule: 'upward import', message: `upward import: ${where}` });
    else if (b.rank === a.rank) out.push({ rule: 'peer import', message: `peer import: ${where}` });
  }
  for (const cycle of cyclesOf(edges)) {
    out.push({ rule: 'circular import', message: `circular import: ${[...cycle, cycle[0]].join(' -> ')}` });
  }
  return out;
}

/** The strongly connected components with more than one file (or a file importing itself), Tarjan's way. */
function cyclesOf(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) out.push(component.reverse());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}
