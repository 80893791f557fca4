/**
 * Where every control message from Redis or the IPC pipe enters: decoded and checked (wire.ts, controlChecks.ts),
 * then handed on; a message that fails is dropped, counted and logged, and nothing it does can throw into the
 * transport's listener. That listener is node-redis' subscriber (a throw there takes the connection down: main then
 * lost every remote instance for good, issue 33) or a child process's 'message' event (a throw there crashes main).
 *
 * Counted on diagnostics_channel `chorus:control:dropped` ({channel, reason}): main's /metrics turns that into
 * chorus_control_messages_dropped_total; a stage process has no /metrics, so there the log line is what is left.
 * Logged at warn once per channel kind and reason (a flood of garbage must not become a flood of log lines), then
 * at debug.
 */
import { diagnostics } from '../common/diagnostics.ts';
import type { Logger } from '../common/log.ts';
import {
  decodeControl,
  type ControlBodies,
  type ControlChannelKind,
  type DropReason,
  type ControlKind,
} from './wire.ts';

/** How much of a dropped message the log shows (hex), to tell garbage from a foreign writer's format. */
const LOGGED_HEAD_BYTES = 16;

export class ControlGuard {
  readonly #logged = new Set<string>();

  constructor(private readonly log: Logger) {}

  /** Decodes a message read from the channel `name` (of kind `kind`) and hands its body to `deliver`. */
  receive<K extends ControlKind>(
    kind: K,
    name: string,
    bytes: Buffer,
    deliver: (body: ControlBodies[K]) => void,
  ): void {
    let decoded: ReturnType<typeof decodeControl<K>>;
    try {
      decoded = decodeControl(kind, bytes);
    } catch (err) {
      // decodeControl catches what msgpack throws; this is for what nobody foresaw.
      decoded = { ok: false, reason: 'malformed', detail: String(err) };
    }
    if (!decoded.ok) return this.drop(kind, name, decoded.reason, decoded.detail, bytes);
    this.#run(kind, name, () => deliver(decoded.body));
  }

  /** An IPC message (already an object: structured clone), checked by `problemOf` (controlChecks.ts), handed on. */
  accept<T>(name: string, msg: unknown, problemOf: (msg: unknown) => string | null, deliver: (msg: T) => void): void {
    let problem: string | null;
    try {
      problem = problemOf(msg);
    } catch (err) {
      problem = String(err);
    }
    if (problem !== null) return this.drop('ipc', name, 'invalid', problem);
    this.#run('ipc', name, () => deliver(msg as T));
  }

  /** Counts and logs one dropped message (also for callers that refuse a valid one: a fenced heartbeat). */
  drop(kind: ControlChannelKind, name: string, reason: DropReason, detail: string, bytes?: Buffer): void {
    if (diagnostics.controlDropped.hasSubscribers) diagnostics.controlDropped.publish({ channel: kind, reason });
    const fields = {
      channel: name,
      reason,
      detail,
      ...(bytes ? { bytes: bytes.byteLength, head: bytes.subarray(0, LOGGED_HEAD_BYTES).toString('hex') } : {}),
    };
    const key = `${kind}\0${reason}`;
    if (this.#logged.has(key)) return this.log.debug(fields, 'control message dropped');
    this.#logged.add(key);
    this.log.warn(
      fields,
      `control message dropped (${reason}): ${detail}; more of this kind are counted ` +
        `(chorus_control_messages_dropped_total{channel="${kind}",reason="${reason}"}) and logged at debug only`,
    );
  }

  #run(kind: ControlChannelKind, name: string, handle: () => void): void {
    try {
      handle();
    } catch (err) {
      // A bug in handling a valid message: it is lost, the subscription (or main) is not.
      this.log.error({ err, channel: name }, 'handling a control message failed');
      this.drop(kind, name, 'handler_error', String(err));
    }
  }
}
