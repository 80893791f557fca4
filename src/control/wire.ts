/**
 * What travels on the control plane between main and instances on other machines (whatever its engine: ControlLink.ts)
 * and the one place it is decoded and checked. Every message is an envelope, packed with msgpack:
 *
 *   {v, ch, body}
 *   v     the sender's CONTROL_PROTOCOL_VERSION. It is read first and never changes name or place, so hosts that run
 *         two Chorus versions can always tell and say so. Bump it when any body below changes shape or meaning.
 *   ch    the channel kind the message was written for: one replayed or misrouted onto another channel is foreign.
 *   body  what that channel carries (ControlBodies), checked against its schema (below, controlChecks.ts).
 *
 * decodeControl never throws. A throw inside a subscriber listener (node-redis') takes the subscriber connection down,
 * and with it every remote instance (issue 33: one `PUBLISH chorus:hb garbage` did that for good).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Packr } from 'msgpackr';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { EpochMs, InstanceName, LongText, PositiveCount, ShortText, StageId } from '../common/wireValues.ts';
import type { MainToStage, StageToMain } from '../worker/messages.ts';
import { MAX_CONTROL_MESSAGE_BYTES } from '../worker/ControlChannel.ts';
import { compiledCheck, isPlainObject, mainToStageProblem, stageToMainProblem } from './controlChecks.ts';

// 2: `add` carries the kind's arguments in `args`; first_audio, media_failed, release_prefix travel as `kind`.
// 3: values checked against the schemas below; a report to main carries its sender's name lease (`lease`).
export const CONTROL_PROTOCOL_VERSION = 3;

const closed = { additionalProperties: false } as const;

/** What an instance says about itself every HEARTBEAT_MS. */
export const HeartbeatSchema = Type.Object(
  {
    instance: InstanceName,
    stageId: StageId,
    host: ShortText,
    pid: PositiveCount,
    /** The config file's hash (sha256, hex): main refuses an instance of another config. */
    configHash: ShortText,
    startedAtMs: EpochMs,
    /** The value of the instance's name lease (InstanceLease.ts): main fences off beats under a lease not held. */
    lease: ShortText,
  },
  closed,
);
export type Heartbeat = Static<typeof HeartbeatSchema>;

/** Main refuses an instance (another config): the instance exits with this reason. */
export const RefusalSchema = Type.Object({ type: Type.Literal('refused'), reason: LongText }, closed);
export type Refusal = Static<typeof RefusalSchema>;

/** What main publishes under the deployment key. */
export const DeploymentRecordSchema = Type.Object(
  { configHash: ShortText, host: ShortText, pid: PositiveCount },
  closed,
);
export type DeploymentRecord = Static<typeof DeploymentRecordSchema>;

/**
 * An instance's message to main: who sends it (the name main knows it by), the value of the name lease its process
 * holds (as its heartbeats carry it: main takes reports only under the lease it admitted the instance by, so a stale
 * process that lost its name, or another under the same name, cannot speak for the one main knows), and the
 * message (checked by its type: controlChecks.ts).
 */
const ToMainSchema = Type.Object(
  { from: InstanceName, lease: ShortText, msg: Type.Unsafe<StageToMain>(Type.Object({})) },
  closed,
);

const refusalProblem = compiledCheck(RefusalSchema);

/** A channel kind: the schema of its body, and the checks beyond it (a message by its type). */
function channel<S extends TSchema>(schema: S, what: string, then?: (body: Static<S>) => string | null) {
  const check = compiledCheck(schema);
  return { schema, problem: (body: unknown) => check(body, what) ?? then?.(body as Static<S>) ?? null };
}

/**
 * The body each kind of channel carries, declared once: ControlBodies is read off it, and so is decodeControl's
 * check. The messages themselves are declared in src/worker/messages.ts (checked by controlChecks.ts).
 */
const CHANNELS = {
  heartbeat: channel(HeartbeatSchema, 'heartbeat'),
  to_main: channel(ToMainSchema, 'to_main', (b) => stageToMainProblem(b.msg)),
  to_instance: channel(Type.Unsafe<MainToStage | Refusal>(Type.Any()), 'to_instance', (b: unknown) =>
    isPlainObject(b) && b.type === 'refused' ? refusalProblem(b, 'refused') : mainToStageProblem(b),
  ),
  deployment: channel(DeploymentRecordSchema, 'deployment'),
};

export type ControlKind = keyof typeof CHANNELS;
export type ControlBodies = { readonly [K in ControlKind]: Static<(typeof CHANNELS)[K]['schema']> };
/** The `channel` label of chorus_control_messages_dropped_total: a kind, never a name (names carry instances). */
export type ControlChannelKind = ControlKind | 'ipc';

/**
 * Why a message was dropped (the `reason` label). oversize: over MAX_CONTROL_MESSAGE_BYTES; malformed: not
 * msgpack; foreign: msgpack, but not a Chorus envelope for this channel; version: another protocol version;
 * invalid: an envelope whose body is not what its schema declares (a field missing or extra, a value out of range:
 * NaN, a negative count, an array or string over its bound, a name not of its form); unknown: valid, from an
 * instance main does not know (never admitted, or lost); fenced: a heartbeat or report under a name lease it does
 * not hold;
 * handler_error: valid, but handling it threw (a bug, caught so that the subscription survives).
 */
export type DropReason =
  'oversize' | 'malformed' | 'foreign' | 'version' | 'invalid' | 'unknown' | 'fenced' | 'handler_error';

export type Decoded<T> =
  | { readonly ok: true; readonly body: T }
  | { readonly ok: false; readonly reason: DropReason; readonly detail: string; readonly peerVersion?: number };

/** Fields only a Chorus from before protocol versions put at the top of its messages (they had no envelope). */
const UNVERSIONED_FIELDS = ['type', 'from', 'instance', 'configHash'];

const packr = new Packr({ useRecords: false });

export function packControl<K extends ControlKind>(ch: K, body: ControlBodies[K]): Buffer {
  const bytes = packr.pack({ v: CONTROL_PROTOCOL_VERSION, ch, body });
  if (bytes.byteLength > MAX_CONTROL_MESSAGE_BYTES)
    throw new ChorusError(
      ErrorCodes.INTERNAL,
      `control message of ${bytes.byteLength} bytes exceeds ${MAX_CONTROL_MESSAGE_BYTES}`,
    );
  return bytes;
}

/** The body of a message read from a channel of kind `ch`, or why it must be dropped. */
export function decodeControl<K extends ControlKind>(ch: K, bytes: Buffer): Decoded<ControlBodies[K]> {
  if (bytes.byteLength > MAX_CONTROL_MESSAGE_BYTES)
    return drop('oversize', `${bytes.byteLength} bytes, over the limit of ${MAX_CONTROL_MESSAGE_BYTES}`);
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (err) {
    return drop('malformed', `not msgpack (${(err as Error).message})`);
  }
  if (!isPlainObject(value)) return drop('foreign', 'not a Chorus control envelope (not a map)');
  if (typeof value.v !== 'number') {
    const unversioned = UNVERSIONED_FIELDS.some((f) => Object.hasOwn(value, f));
    return unversioned
      ? versionDrop(0, 'a Chorus from before control protocol versions')
      : drop('foreign', 'not a Chorus control envelope (no version field)');
  }
  if (value.v !== CONTROL_PROTOCOL_VERSION) return versionDrop(value.v);
  if (value.ch !== ch)
    return drop('foreign', `an envelope for ${JSON.stringify(value.ch)?.slice(0, 40)} channels, not ${ch}`);
  const problem = CHANNELS[ch].problem(value.body);
  return problem === null ? { ok: true, body: value.body as ControlBodies[K] } : drop('invalid', problem);
}

function drop(reason: DropReason, detail: string): Decoded<never> {
  return { ok: false, reason, detail };
}

function versionDrop(peerVersion: number, who = `a Chorus speaking version ${peerVersion}`): Decoded<never> {
  return {
    ok: false,
    reason: 'version',
    peerVersion,
    detail:
      `control protocol version ${peerVersion} (${who}); this process speaks version ${CONTROL_PROTOCOL_VERSION}: ` +
      'run the same Chorus version on every host of the deployment',
  };
}
