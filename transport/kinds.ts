/**
 * Connector kinds by name: each one's YAML options (snake_case, checked by `chorus config check`), whether it links
 * separate processes, whether it crosses hosts, what main provisions for an edge before any stage starts, and how a
 * process opens its end. A stage graph may name only the kinds that link processes (`connectorKinds`): config
 * refuses the others with the reason, so a graph never names a transport that would fail at start.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { ConnectorSpec } from '../src/common/graph.ts';
import { ByteSize, closed, optional, parseByteSize } from '../src/common/yamlSchema.ts';
import type { Connector } from './Connector.ts';
import type { EdgeBinding } from './edges.ts';
import { createInprocHub, openInprocHub } from './inproc/InprocHub.ts';
import { DEFAULT_INPROC_CAPACITY_BYTES } from './inproc/InprocConnector.ts';
import { ShmConnector } from './shm/ShmConnector.ts';
import { RedisConnector, type RedisConnectorOptions } from './redis/RedisConnector.ts';

export interface ProvisionedEdges {
  readonly edges: readonly EdgeBinding[];
  /** Frees what provision() created (shm: unlinks the rings). Idempotent. */
  release(): void;
}

export interface ConnectorKindEntry {
  /** Links stage instances in separate processes (every stage of a graph runs in its own): config may select it. */
  readonly multiProcess: boolean;
  /**
   * Links instances on different hosts: a stage whose every edge uses such a kind may be placement: remote, and
   * the control plane and the encoder-output store may share its server. Callers ask crossesHosts(), not the name.
   */
  readonly crossesHosts: boolean;
  /** The `options:` mapping of a connector of this kind (closed: a misspelt option is an error). */
  readonly optionsSchema: TSchema;
  /** Defaulted options, camelCase, from options already valid against optionsSchema. */
  resolveOptions(raw: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>>;
  /** In main, before the stages start: whatever each edge needs to exist (shm: its ring). */
  provision(edges: readonly EdgeBinding[], options: Readonly<Record<string, unknown>>): ProvisionedEdges;
  /** In any process: its end of its edges of this kind. */
  open(self: string, edges: readonly EdgeBinding[], options: Readonly<Record<string, unknown>>): Promise<Connector>;
}

/** 16 MiB per edge ring: ~80 Code2Wav chunks of 25 frames in flight, or a ~4 MiB omni prompt chunk with room. */
export const DEFAULT_RING_BYTES = 16 * 1024 * 1024;

const shm: ConnectorKindEntry = {
  multiProcess: true,
  crossesHosts: false,
  optionsSchema: Type.Object({ ring_bytes: optional(ByteSize) }, closed),
  resolveOptions: (raw) => ({ ringBytes: parseByteSize((raw.ring_bytes as number | string) ?? DEFAULT_RING_BYTES) }),
  provision(edges, options) {
    const rings = ShmConnector.createRings(edges, Number(options.ringBytes));
    let released = false;
    return {
      edges: edges.map((e, i) => ({ ...e, ringName: rings[i].ringName })),
      release() {
        if (released) return;
        released = true;
        ShmConnector.unlinkRings(rings);
      },
    };
  },
  async open(self, edges) {
    return ShmConnector.open({
      me: self,
      edges: edges.map((e) => {
        if (!e.ringName) throw new Error(`edge ${e.from}->${e.to} has no shared-memory ring`);
        return { from: e.from, to: e.to, ringName: e.ringName };
      }),
    });
  },
};

/** Stage instances within one process share a hub (transport/inproc/InprocHub.ts): tests, in-process embedding. */
const inproc: ConnectorKindEntry = {
  multiProcess: false,
  crossesHosts: false,
  optionsSchema: Type.Object({ capacity_bytes: optional(ByteSize) }, closed),
  resolveOptions: (raw) => ({
    capacityBytes: parseByteSize((raw.capacity_bytes as number | string) ?? DEFAULT_INPROC_CAPACITY_BYTES),
  }),
  provision(edges, options) {
    const hub = createInprocHub(Number(options.capacityBytes ?? DEFAULT_INPROC_CAPACITY_BYTES));
    return { edges: edges.map((e) => ({ ...e, hub: hub.id })), release: hub.release };
  },
  async open(self, edges) {
    const hub = edges[0]?.hub;
    if (!hub || edges.some((e) => e.hub !== hub))
      throw new Error(`inproc edges of ${self} do not share one provisioned hub`);
    return openInprocHub(hub, self);
  },
};

/** Defaults of the redis connector (README "Scale out" sizes them). */
export const REDIS_DEFAULTS = {
  url: 'redis://127.0.0.1:6379',
  keyPrefix: 'chorus',
  ttlSeconds: 60,
  maxFrameBytes: 64 * 1024 * 1024,
  maxEdgeBytes: 64 * 1024 * 1024,
} as const;

/**
 * Stage instances on any hosts that reach one Redis (a node, or a Cluster). Nothing to provision: lists exist while
 * they hold frames. CHORUS_REDIS_URL, when set, replaces `url` (one config file for every host).
 */
const redis: ConnectorKindEntry = {
  multiProcess: true,
  crossesHosts: true,
  optionsSchema: Type.Object(
    {
      url: optional(
        Type.Union([Type.String({ pattern: '^(redis|rediss|redis\\+clusters?)://' }), Type.Array(Type.String())], {
          errorMessage:
            'must be a redis://, rediss:// or redis+cluster://host:port,host:port URL, or a list of node URLs',
        }),
      ),
      username: optional(Type.String()),
      password: optional(Type.String()),
      key_prefix: optional(
        Type.String({ pattern: '^[A-Za-z0-9_.-]+$', errorMessage: 'must be letters, digits, _ . -' }),
      ),
      ttl_seconds: optional(Type.Integer({ minimum: 1 })),
      max_frame_bytes: optional(ByteSize),
      max_edge_bytes: optional(ByteSize),
    },
    closed,
  ),
  resolveOptions: (raw) =>
    ({
      url: process.env.CHORUS_REDIS_URL || clusterUrl(raw.url as string | string[] | undefined) || REDIS_DEFAULTS.url,
      username: raw.username as string | undefined,
      password: raw.password as string | undefined,
      keyPrefix: (raw.key_prefix as string | undefined) ?? REDIS_DEFAULTS.keyPrefix,
      ttlSeconds: (raw.ttl_seconds as number | undefined) ?? REDIS_DEFAULTS.ttlSeconds,
      maxFrameBytes: parseByteSize((raw.max_frame_bytes as number | string) ?? REDIS_DEFAULTS.maxFrameBytes),
      maxEdgeBytes: parseByteSize((raw.max_edge_bytes as number | string) ?? REDIS_DEFAULTS.maxEdgeBytes),
    }) satisfies RedisConnectorOptions,
  provision: (edges) => ({ edges, release() {} }),
  open: (self, _edges, options) => RedisConnector.open(self, options as unknown as RedisConnectorOptions),
};

/** A list of node URLs is a Cluster: `redis+cluster://host:port,host:port` (credentials of the first). */
function clusterUrl(url: string | string[] | undefined): string | undefined {
  if (!Array.isArray(url)) return url;
  const nodes = url.map((u) => /^(rediss?):\/\/(?:([^@/]*)@)?([^/?#]+)/.exec(u));
  if (nodes.length === 0 || nodes.some((m) => m === null)) return undefined;
  const [first] = nodes as RegExpExecArray[];
  const tls = first[1] === 'rediss' ? 's' : '';
  return `redis+cluster${tls}://${first[2] ? `${first[2]}@` : ''}${nodes.map((m) => m![3]).join(',')}`;
}

/** Every built kind, by name: what createConnector opens. */
export const allConnectorKinds: Readonly<Record<string, ConnectorKindEntry>> = { shm, inproc, redis };

/** The kinds a stage graph may select: the built ones that link separate processes. */
export const connectorKinds: Readonly<Record<string, ConnectorKindEntry>> = Object.fromEntries(
  Object.entries(allConnectorKinds).filter(([, entry]) => entry.multiProcess),
);

/** The entry of `kind` in `kinds` (own keys only: "constructor" is no connector kind). */
export function kindEntry<T>(kinds: Readonly<Record<string, T>>, kind: string): T | undefined {
  return Object.hasOwn(kinds, kind) ? kinds[kind] : undefined;
}

/** Capacity of each ring of an shm connector (its resolved ring_bytes). */
export function ringBytesOf(spec: ConnectorSpec): number {
  return Number(spec.options.ringBytes ?? DEFAULT_RING_BYTES);
}

/** A connector of `kind` links instances on different hosts (false for a kind that is not built). */
export function crossesHosts(kind: string | undefined): boolean {
  return kind !== undefined && (kindEntry(allConnectorKinds, kind)?.crossesHosts ?? false);
}

/**
 * The Redis a connector reaches (its resolved url, credentials and key prefix), or null when it is of another kind:
 * the control plane and the encoder-output store share the server of the graph's redis connector.
 */
export function redisOptionsOf(spec: ConnectorSpec | undefined): RedisConnectorOptions | null {
  return spec && kindEntry(allConnectorKinds, spec.kind) === redis
    ? (spec.options as unknown as RedisConnectorOptions)
    : null;
}
