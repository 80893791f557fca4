/**
 * The values a message that crosses a process or host boundary may carry, as TypeBox schemas: each message is
 * declared once (src/worker/messages.ts, src/control/wire.ts) from these, its TypeScript type derived with Static<>,
 * and the control guard checks every message against its schema before anything reads it.
 *
 * Shape alone is not enough: a stats report with `batchSizes: [NaN]` has the right shape and used to crash main
 * (prom-client throws on NaN, from a diagnostics_channel subscriber, so nothing caught it: issue 41). Hence every
 * number here is finite (TypeBox refuses NaN and ±Infinity by default) and in range, every array and string has a
 * bound, and names have their form. The bounds are far above what a healthy peer sends; they exist so that no value
 * can make the receiver allocate, loop or divide without limit.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** What the receiver only reads: TypeBox's Static of an array is mutable, the senders hold readonly arrays. */
export function List<T extends TSchema>(items: T, maxItems: number) {
  return Type.Unsafe<readonly Static<T>[]>(Type.Array(items, { maxItems }));
}

/** A count (requests, tokens, bytes, entries): a non-negative integer a double holds exactly. */
export const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
/** A positive count (a pid, threads, a dimension). */
export const PositiveCount = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
/** A duration or a rate: finite and non-negative (fractions allowed). */
export const NonNegative = Type.Number({ minimum: 0 });
/**
 * A duration in ms: finite, >= 0, at most ~317 years (a timeout from the config has no upper bound there, so this one
 * is far above any that makes sense: a message is never refused for a setting the config took).
 */
export const DurationMs = Type.Number({ minimum: 0, maximum: 1e13 });
/** A wall-clock time, epoch ms (Date.now(), or a deadline: now + a DurationMs): after 2000, before ~5100. */
export const EpochMs = Type.Number({ minimum: 946_684_800_000, maximum: 1e14 });

/** A stage id, as the config allows (src/config/schema.ts stage_id); main also names itself `main`. */
export const StageId = Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 64 });
/**
 * An instance name: `<stageId>#<replica>` (local) or `<stageId>#<name>` (`chorus stage --name`, letters, digits, `.`,
 * `_`, `-`).
 */
export const InstanceName = Type.String({
  pattern: '^[a-z0-9]+(-[a-z0-9]+)*#[A-Za-z0-9][A-Za-z0-9._-]*$',
  maxLength: 128,
});
/** A request id (main makes them; a client's own ids are never one). */
export const RequestId = Type.String({ minLength: 1, maxLength: 128 });
/** A short free-form string: a reason, a host name, a key. */
export const ShortText = Type.String({ maxLength: 1024 });
/** A message meant for a person (an error, a warning). */
export const LongText = Type.String({ maxLength: 16_384 });

/** Samples a stats report carries per list (StageCore keeps at most 512 between two reports). */
export const MAX_SAMPLES_PER_REPORT = 512;
