/**
 * The shape each control message must have before anything acts on it: its `type` is one this code knows, and the
 * fields the receiver reads first are there with the right JavaScript type. A message that fails is dropped by the
 * guard (ControlGuard.ts), never half-handled: `{type: 'abort'}` without a requestId, or a `ready` whose settings
 * are not an object, used to reach the step loop or the join path and throw there.
 *
 * Checked: the top level of each message (and of a READY's settings, which main reads on join). Not checked: nested
 * plans (a boot's graph, an add's kind arguments, a kind message's body: the kind's core reads those). A peer that
 * speaks this protocol version runs this code; the shapes stop garbage and foreign writers, and keeping other
 * writers off the channels is Redis ACLs' job (docs/scale-out-security.md).
 */
import type { MainToStage, StageToMain } from '../worker/messages.ts';

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array';
/** Field -> its kind; a trailing `?` makes it optional (absent, undefined or null). */
type Shape = Readonly<Record<string, Kind | `${Kind}?`>>;

/**
 * Keyed by every type main sends: a new message type does not compile until it has a shape here. `drop_all` is
 * missing on purpose: the instance's own channel injects it, main never sends it, so one arriving is foreign.
 */
const MAIN_TO_STAGE: { readonly [T in Exclude<MainToStage['type'], 'drop_all'>]: Shape } = {
  boot: {
    graph: 'object',
    stageIndex: 'number',
    replica: 'number',
    edges: 'array',
    instance: 'string?',
    bootId: 'string?',
  },
  add: {
    requestId: 'string',
    sampling: 'object',
    downstream: 'array',
    upstreams: 'array',
    firstChunkDeadline: 'number',
    liveRequests: 'number?',
    traceparent: 'string?',
    cacheSalt: 'string?',
    // The kind's own arguments: the kind's core checks what it reads of them (stages/<kind>/protocol.ts).
    args: 'object',
  },
  abort: { requestId: 'string', reason: 'string' },
  pause: { requestId: 'string' },
  resume: { requestId: 'string' },
  // A kind's own message: the envelope here, the body checked by the kind's protocol (thinkerMessageOf).
  kind: { requestId: 'string?', body: 'object' },
  shutdown: { drainMs: 'number' },
};

const STAGE_TO_MAIN: { readonly [T in StageToMain['type']]: Shape } = {
  ready: { settings: 'object' },
  boot_failed: { error: 'object' },
  finished: { requestId: 'string', finishReason: 'string', numTokens: 'number', error: 'object?', warnings: 'array?' },
  stats: { stats: 'object' },
  ec_stored: {
    requestId: 'string',
    itemKey: 'string',
    contentKey: 'string',
    bytes: 'number',
    seq: 'number',
    remote: 'boolean',
  },
  drained: {},
};

const READY_SETTINGS: Shape = {
  stageId: 'string',
  replica: 'number',
  pid: 'number',
  threads: 'number',
  modelFiles: 'array',
  loadMs: 'number',
  facts: 'object',
};

export const HEARTBEAT_SHAPE: Shape = {
  instance: 'string',
  stageId: 'string',
  host: 'string',
  pid: 'number',
  configHash: 'string',
  startedAtMs: 'number',
  lease: 'string',
};
export const DEPLOYMENT_SHAPE: Shape = { configHash: 'string', host: 'string', pid: 'number' };
export const TO_MAIN_SHAPE: Shape = { from: 'string', msg: 'object' };
const REFUSAL_SHAPE: Shape = { reason: 'string' };

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): Kind | 'other' {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'other';
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'boolean' || t === 'object' ? t : 'other';
}

/** Null when `value` has `shape`, else what is wrong (for the log). */
export function shapeProblem(value: unknown, shape: Shape, what: string): string | null {
  if (!isPlainObject(value)) return `${what} is not an object`;
  for (const [field, spec] of Object.entries(shape)) {
    const optional = spec.endsWith('?');
    const want = (optional ? spec.slice(0, -1) : spec) as Kind;
    const v = value[field];
    if (optional && (v === undefined || v === null)) continue;
    if (kindOf(v) !== want) return `${what}.${field} is ${v === undefined ? 'missing' : kindOf(v)}, not ${want}`;
  }
  return null;
}

function typedProblem(msg: unknown, shapes: Readonly<Record<string, Shape>>, what: string): string | null {
  if (!isPlainObject(msg)) return `${what} is not an object`;
  const type = msg.type;
  if (typeof type !== 'string' || !Object.hasOwn(shapes, type))
    return `${what}.type ${JSON.stringify(type)?.slice(0, 40)} is not a message type of this protocol`;
  return shapeProblem(msg, shapes[type], `${what} (${type})`);
}

/** What main may send a stage (and, on a remote instance's channel, main's refusal). */
export function mainToStageProblem(msg: unknown, allowRefusal = false): string | null {
  if (allowRefusal && isPlainObject(msg) && msg.type === 'refused') return shapeProblem(msg, REFUSAL_SHAPE, 'refused');
  return typedProblem(msg, MAIN_TO_STAGE, 'message');
}

/** What a stage may send main. */
export function stageToMainProblem(msg: unknown): string | null {
  const problem = typedProblem(msg, STAGE_TO_MAIN, 'message');
  if (problem !== null) return problem;
  const m = msg as { type: string; settings?: unknown };
  return m.type === 'ready' ? shapeProblem(m.settings, READY_SETTINGS, 'ready.settings') : null;
}
