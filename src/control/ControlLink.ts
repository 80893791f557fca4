/**
 * What one control-plane engine provides (Redis today, `redis/RedisControl.ts`): a connection that publishes and
 * subscribes to the plane's channels, keeps the deployment record and the instances' name leases, and drops the
 * frames pushed into a lost instance. Everything above it is engine-neutral: main's membership (Membership.ts), an
 * instance's channel (InstanceChannel.ts), its heartbeat thread (heartbeatWorker.ts), the leases' rules
 * (InstanceLease.ts) and the envelope every message travels in (wire.ts). A second engine is this interface over its
 * client, one line in engines.ts, and a connector kind for its frames (transport/kinds.ts): docs/architecture.md
 * counts it.
 *
 * What the engine must keep true: a subscriber callback never sees a throw of the guard's (it wraps each delivery);
 * publish is fire-and-forget (a message while the link is down is lost: heartbeats stopping turn that into a lost
 * instance); a record written with a TTL is gone after it unless written again; a lease claim is atomic
 * (check-and-set), and a release deletes only the caller's own value.
 */
import type { ChorusError } from '../common/errors.ts';

/** A channel of the plane, by what it carries; its name on the wire is the engine's (nameOf). */
export type ControlChannelAt =
  | { readonly kind: 'heartbeat' }
  | { readonly kind: 'to_main' }
  | { readonly kind: 'to_instance'; readonly instance: string };

/** Anything of the plane that has a name: its channels, the deployment record, an instance's name lease. */
export type ControlAt =
  ControlChannelAt | { readonly kind: 'deployment' } | { readonly kind: 'lease'; instance: string };

/** One claim of a name lease: held (taken, or renewed as ours), or the holder's value and its TTL (-1: none). */
export type Claim = { readonly held: true } | { readonly held: false; readonly holder: string; readonly ttlMs: number };

export interface ControlLink {
  readonly up: boolean;
  /** Where a channel or record lives on this engine (a Redis key), for logs and errors. */
  nameOf(at: ControlAt): string;
  /** Where the plane is, for messages (`Redis at redis://host:6379`): no credentials. */
  readonly where: string;
  subscribe(at: ControlChannelAt, onBytes: (bytes: Buffer) => void): Promise<void>;
  unsubscribe(at: ControlChannelAt): Promise<void>;
  /** Fire-and-forget; rejects when the write fails (callers that do not care catch it). */
  publish(at: ControlChannelAt, bytes: Uint8Array): Promise<void>;
  /** The deployment record main keeps while it runs (null: none). */
  readDeployment(): Promise<Buffer | null>;
  writeDeployment(bytes: Uint8Array, ttlMs: number): Promise<void>;
  deleteDeployment(): Promise<void>;
  /** Takes `instance`'s lease for `value` when free or already `value` (and renews it for ttlMs), atomically. */
  claimLease(instance: string, value: string, ttlMs: number): Promise<Claim>;
  /** The value that holds `instance`'s lease now (null: nobody). */
  leaseHolder(instance: string): Promise<string | null>;
  /** Ends the lease only while `value` holds it. */
  releaseLease(instance: string, value: string): Promise<void>;
  /**
   * Best effort: deletes the frames pushed into `instance` for these runs, on those of `connectors` (the resolved
   * options of the connectors of this engine's kind that carry edges into it) that live on this link's server.
   */
  dropInbox(instance: string, runIds: readonly string[], connectors: readonly ConnectorOptions[]): void;
  onDown(handler: (err: Error) => void): void;
  onReconnect(handler: () => void): void;
  /** A failure to reach the plane at start, as the error to report (it names the server, no credentials). */
  unavailable(cause: unknown): ChorusError;
  close(): Promise<void>;
}

/** A connector's resolved options (transport/kinds.ts `resolveOptions`): the engine reads its own. */
export type ConnectorOptions = Readonly<Record<string, unknown>>;

export interface ControlEngine {
  /** Connects to the plane the connector with these options reaches; `name` names the connection on the server. */
  connect(options: ConnectorOptions, name: string): Promise<ControlLink>;
}
