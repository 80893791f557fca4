/**
 * The openai SDK's own Realtime server event type (`RealtimeServerEvent` in openai/resources/realtime/realtime.d.ts)
 * as a JSON schema, generated from the installed SDK with ts-json-schema-generator, and an ajv validator for it: a
 * Chorus server event that does not validate is one an SDK user's code is not written for (a misnamed or missing
 * field, a null where the SDK allows a value or nothing, a type OpenAI does not send).
 *
 * Strict as the types are: an object accepts no property its type does not name, except Chorus's documented
 * extensions (`chorus_*`, and the few in BEYOND_THE_TYPES, each said in docs/openai-surface.md). Generating takes
 * seconds: the schema is cached per SDK version under node_modules/.cache.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Ajv } from 'ajv';
import { createGenerator } from 'ts-json-schema-generator';

const require = createRequire(import.meta.url);
// The package's entry (its exports list no package.json) lives at its root.
const SDK_DIR = path.dirname(require.resolve('openai'));
const TYPE = 'RealtimeServerEvent';

type Schema = Record<string, unknown>;

function generate(): Schema {
  return createGenerator({
    path: path.join(SDK_DIR, 'resources', 'realtime', 'realtime.d.ts'),
    type: TYPE,
    skipTypeCheck: true,
    expose: 'export',
    topRef: true,
  }).createSchema(TYPE) as Schema;
}

/** Lets `chorus_*` properties through wherever the SDK's types close an object. */
function allowExtensions(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(allowExtensions);
  if (node === null || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (o.additionalProperties === false) o.patternProperties = { '^chorus_': {}, ...(o.patternProperties ?? {}) };
  Object.values(o).forEach(allowExtensions);
}

function loadSchema(): Schema {
  const { version } = JSON.parse(readFileSync(path.join(SDK_DIR, 'package.json'), 'utf8')) as { version: string };
  const dir = path.join(SDK_DIR, '..', '.cache', 'chorus');
  const file = path.join(dir, `openai-${version}-${TYPE}.schema.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Schema;
  const schema = generate();
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, JSON.stringify(schema));
  return schema;
}

export type EventCheck = (event: unknown) => string | null;

/** The session's echo of the generation extensions a client may set (docs/openai-surface.md). */
const SAMPLING_EXTENSIONS = [
  'seed',
  'top_k',
  'top_p',
  'repetition_penalty',
  'ignore_eos',
  'initial_codec_chunk_frames',
  'ttfp_target_ms',
];
const SESSION = [['session', 'id'], ['session', 'object'], ...SAMPLING_EXTENSIONS.map((f) => ['session', f])];
const RESPONSE = [
  ['response', 'usage', 'audio_seconds'],
  ['response', 'status_details', 'error', 'message'],
];

/**
 * Fields Chorus sends beyond the SDK's types, by event type: what OpenAI's own server sends that the SDK does not
 * type (a session's `id` and `object`), and Chorus's extensions named before the `chorus_` rule (the generation
 * extensions a session echoes, `usage.audio_seconds`, the failed response's error `message`). Each is documented;
 * anything else beyond the types fails.
 */
const BEYOND_THE_TYPES: Readonly<Record<string, readonly string[][]>> = {
  'session.created': SESSION,
  'session.updated': SESSION,
  'response.created': RESPONSE,
  'response.done': RESPONSE,
};

/** A copy of the event without the fields listed for its type. */
function withoutExtensions(event: unknown): unknown {
  const paths = BEYOND_THE_TYPES[(event as { type?: string }).type ?? ''];
  if (!paths) return event;
  const copy = structuredClone(event) as Record<string, unknown>;
  for (const p of paths) {
    const parent = p.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], copy);
    if (parent && typeof parent === 'object') delete (parent as Record<string, unknown>)[p.at(-1)!];
  }
  return copy;
}

/**
 * A checker of server events: null when an event validates against the SDK's type of its `type`, else what is wrong
 * with it (an event type the SDK does not have is wrong too).
 */
export function realtimeServerEventCheck(): EventCheck {
  const schema = loadSchema();
  allowExtensions(schema);
  const definitions = schema.definitions as Record<string, { properties?: { type?: { const?: string } } }>;
  const branches = (definitions[TYPE] as unknown as { anyOf: { $ref: string }[] }).anyOf;
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema(schema, 'sdk');
  const byType = new Map<string, ReturnType<Ajv['compile']>>();
  for (const { $ref } of branches) {
    const name = decodeURIComponent($ref.slice('#/definitions/'.length));
    const type = definitions[name]?.properties?.type?.const;
    if (type) byType.set(type, ajv.compile({ $ref: `sdk#/definitions/${encodeURIComponent(name)}` }));
  }
  return (event) => {
    const type = (event as { type?: unknown }).type;
    const validate = typeof type === 'string' ? byType.get(type) : undefined;
    if (!validate) return `${String(type)}: not a server event type of the openai SDK`;
    if (validate(withoutExtensions(event))) return null;
    const errors = (validate.errors ?? []).slice(0, 4);
    const said = errors.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    return `${type}: ${said.join('; ')}`;
  };
}
