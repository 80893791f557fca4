/**
 * Whether a control message may be acted on: its `type` is one this code knows and every value in it is what its
 * schema (src/worker/messages.ts, wire.ts) declares: numbers finite and in range, arrays and strings bounded, names of
 * their form, no field the schema does not name. A message that fails is dropped by the guard (ControlGuard.ts),
 * never half-handled: `{type: 'abort'}` without a requestId used to reach the step loop and throw there, and a
 * stats report with `batchSizes: [NaN]` had the right shape and crashed main in prom-client (issue 41).
 *
 * Not checked here: what belongs to a kind (an add's `args`, a kind message's `body`: the kind's core checks what it
 * reads of them) and the boot's graph (main's own validated config, on a channel only main may publish to: keeping
 * other writers off the channels is Redis ACLs' job, docs/scale-out-security.md).
 */
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { MAIN_TO_STAGE_SCHEMAS, STAGE_TO_MAIN_SCHEMAS } from '../worker/messages.ts';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A schema compiled once (TypeCompiler: ~10x Value.Check; main checks every stats report of every instance). */
export function compiledCheck(schema: TSchema): (value: unknown, what: string) => string | null {
  const check: TypeCheck<TSchema> = TypeCompiler.Compile(schema);
  return (value, what) => {
    if (check.Check(value)) return null;
    const first = check.Errors(value).First();
    if (!first) return `${what} does not match its schema`;
    const at = first.path === '' ? what : `${what}${first.path.replaceAll('/', '.')}`;
    return `${at}: ${first.message} (got ${describe(first.value)})`;
  };
}

/** A value for the log: short, and never the whole of a huge string or array. */
function describe(value: unknown): string {
  if (typeof value === 'number') return String(value); // NaN and Infinity as such (JSON would say null)
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'string') return value.length > 40 ? `a string of ${value.length} chars` : JSON.stringify(value);
  if (isPlainObject(value)) return 'an object';
  return String(value);
}

type Checks = Readonly<Record<string, (value: unknown, what: string) => string | null>>;

function checksOf(schemas: Readonly<Record<string, TSchema>>): Checks {
  return Object.fromEntries(Object.entries(schemas).map(([type, schema]) => [type, compiledCheck(schema)]));
}

const MAIN_TO_STAGE = checksOf(MAIN_TO_STAGE_SCHEMAS);
const STAGE_TO_MAIN = checksOf(STAGE_TO_MAIN_SCHEMAS);

function typedProblem(msg: unknown, checks: Checks, what: string): string | null {
  if (!isPlainObject(msg)) return `${what} is not an object`;
  const type = msg.type;
  if (typeof type !== 'string' || !Object.hasOwn(checks, type))
    return `${what}.type ${JSON.stringify(type)?.slice(0, 40)} is not a message type of this protocol`;
  return checks[type](msg, `${what} (${type})`);
}

/** What main may send a stage. */
export function mainToStageProblem(msg: unknown): string | null {
  return typedProblem(msg, MAIN_TO_STAGE, 'message');
}

/** What a stage may send main. */
export function stageToMainProblem(msg: unknown): string | null {
  return typedProblem(msg, STAGE_TO_MAIN, 'message');
}
