/**
 * Random payloads for the control-plane channels (src/control/wire.ts), from a seeded generator so a failing
 * run can be replayed: raw bytes, truncated envelopes, msgpack that is no envelope, other protocol versions, messages
 * of the unversioned format before them, envelopes for another channel, bodies without their fields, and messages a
 * valid peer could send that must change nothing: forged heartbeats (a live name under a lease it does not hold, or
 * a name nobody holds) and aborts or pauses of requests nobody runs.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import {
  CONTROL_PROTOCOL_VERSION,
  HeartbeatSchema,
  packControl,
  RefusalSchema,
  type ControlKind,
} from '../../src/control/wire.ts';
import { MAIN_TO_STAGE_SCHEMAS, STAGE_TO_MAIN_SCHEMAS } from '../../src/worker/messages.ts';
import { arbitraryOf, mutated, mutationsOf } from './schemaFuzz.ts';
import { firstAudioMessage } from '../../stages/requestEvents.ts';
import { seededRandom } from '../../bench/ttfp/prompts.ts';

const raw = new Packr({ useRecords: false });

type Payload = (r: () => number) => Buffer;

export class ControlFuzz {
  readonly #r: () => number;

  /** `instances`: names live in the deployment (forged heartbeats and messages use them). */
  constructor(
    seed: number,
    private readonly instances: readonly string[],
  ) {
    this.#r = seededRandom(seed);
  }

  /** One payload for a channel of `kind`. */
  next(kind: ControlKind): Buffer {
    const generic: Payload[] = [
      (r) => Buffer.from(Array.from({ length: Math.floor(r() * 300) }, () => Math.floor(r() * 256))),
      (r) => {
        const valid = this.#valid(kind);
        return valid.subarray(0, Math.floor(r() * valid.byteLength));
      },
      (r) => raw.pack(this.#value(r, 3)),
      (r) => raw.pack({ v: CONTROL_PROTOCOL_VERSION + 1 + Math.floor(r() * 5), ch: kind, body: this.#value(r, 2) }),
      () => raw.pack(this.#unversioned(kind)),
      () =>
        raw.pack({ v: CONTROL_PROTOCOL_VERSION, ch: this.#pick(['heartbeat', 'to_main', 'to_instance']), body: {} }),
      (r) =>
        raw.pack({ v: CONTROL_PROTOCOL_VERSION, ch: kind, body: { ...this.#shapeless(), junk: this.#value(r, 1) } }),
    ];
    const harmless: Payload[] = [() => this.#harmless(kind)];
    const all = [...generic, ...harmless];
    return all[Math.floor(this.#r() * all.length)](this.#r);
  }

  #pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#r() * items.length)];
  }

  #id(): string {
    return `fuzz-${Math.floor(this.#r() * 1e9).toString(36)}`;
  }

  /** A random msgpack-able value (what a foreign writer on the channel might send). */
  #value(r: () => number, depth: number): unknown {
    const roll = r();
    if (depth <= 0 || roll < 0.3) return this.#pick([null, true, 7, -1.5, 'talker#f1', '', 2 ** 40]);
    if (roll < 0.6) return Array.from({ length: Math.floor(r() * 4) }, () => this.#value(r, depth - 1));
    const o: Record<string, unknown> = {};
    for (const key of ['type', 'from', 'msg', 'v', 'requestId', this.#id()].filter(() => r() < 0.5))
      o[key] = this.#value(r, depth - 1);
    return o;
  }

  /** The format before protocol versions: on ctl:main a `drained` made the old main drop that instance. */
  #unversioned(kind: ControlKind): unknown {
    const instance = this.#pick(this.instances);
    if (kind === 'to_main') return { from: instance, msg: { type: 'drained' } };
    if (kind === 'heartbeat')
      return { instance, stageId: 'talker', host: 'x', pid: 1, configHash: 'x', startedAtMs: 1 };
    return { type: 'shutdown', drainMs: 0 };
  }

  /** A body with a known type but without its fields. */
  #shapeless(): Record<string, unknown> {
    return this.#pick([
      { type: 'abort' },
      { type: 'add', requestId: 5 },
      { type: 'kind', requestId: 'r' },
      { type: 'boot', graph: 'x' },
      { from: this.#pick(this.instances), msg: { type: 'finished' } },
      { from: this.#pick(this.instances), msg: { type: 'ready', settings: 1 } },
      { instance: this.#pick(this.instances), pid: 'x' },
    ]);
  }

  /** Well-formed, and must change nothing. */
  #harmless(kind: ControlKind): Buffer {
    const instance = this.#pick(this.instances);
    if (kind === 'heartbeat')
      return packControl('heartbeat', {
        instance: this.#r() < 0.5 ? instance : `talker#${this.#id()}`,
        stageId: instance.split('#')[0],
        host: 'forger',
        pid: 1,
        configHash: 'x',
        startedAtMs: Date.now(),
        lease: `${this.#id()} forger 1`,
      });
    if (kind === 'to_main')
      return packControl('to_main', {
        from: `talker#${this.#id()}`, // nobody main knows
        lease: `${this.#id()} forger 1`,
        msg: { type: 'finished', requestId: this.#id(), finishReason: 'stop', numTokens: 1 },
      });
    const requestId = this.#id();
    return packControl(
      'to_instance',
      this.#pick([
        { type: 'abort', requestId, reason: 'fuzz' },
        { type: 'pause', requestId },
        { type: 'resume', requestId },
        firstAudioMessage(requestId),
        // A kind body no kind knows, and a Thinker message without its fields: each core ignores it.
        { type: 'kind', requestId, body: { type: 'media_failed', error: 5 } },
      ] as const),
    );
  }

  #valid(kind: ControlKind): Buffer {
    return kind === 'deployment'
      ? packControl('deployment', { configHash: 'x', host: 'h', pid: 1 })
      : this.#harmless(kind);
  }
}

/** One value-fuzzed message: the channel kind it goes to and its bytes, as a peer of this version writes them. */
export interface FuzzedMessage {
  readonly kind: ControlKind;
  readonly type: string;
  readonly bytes: Buffer;
}

/**
 * `count` messages of every control message type, each valid but for one place made invalid (test/helpers/
 * schemaFuzz.ts: NaN, ±Infinity, negative, huge, wrong types, names not of their form, fields missing or extra),
 * spread evenly over the types, from fast-check with `seed`. Reports to main name a live instance (`instances`) as
 * their sender, so that only the check of their values stands between them and main's metrics and routing. Those
 * over the control message limit (a huge array can be) are left out: the sender's encoder refuses them.
 */
export function valueFuzzedMessages(count: number, seed: number, instances: readonly string[]): FuzzedMessage[] {
  const routes: [ControlKind, string, TSchema][] = [
    ...Object.entries(STAGE_TO_MAIN_SCHEMAS).map(([type, msg]): [ControlKind, string, TSchema] => [
      'to_main',
      type,
      // A live sender's name, under a lease it does not hold (the fuzz cannot know the real one: those are fenced).
      Type.Object(
        { from: Type.Union(instances.map((i) => Type.Literal(i))), lease: Type.Literal('forged host 1'), msg },
        { additionalProperties: false },
      ),
    ]),
    ['heartbeat', 'heartbeat', HeartbeatSchema],
    ...Object.entries(MAIN_TO_STAGE_SCHEMAS).map(([type, schema]): [ControlKind, string, TSchema] => [
      'to_instance',
      type,
      schema,
    ]),
    ['to_instance', 'refused', RefusalSchema],
  ];
  const perRoute = Math.ceil(count / routes.length);
  const out: FuzzedMessage[] = [];
  routes.forEach(([kind, type, schema], i) => {
    const cases = arbitraryOf(schema).chain((valid) =>
      fc.constantFrom(...mutationsOf(schema, valid)).map((mutation) => mutated(valid, mutation)),
    );
    for (const body of fc.sample(cases, { seed: seed + i, numRuns: perRoute })) {
      try {
        out.push({ kind, type, bytes: packControl(kind, body as never) });
      } catch {
        // over MAX_CONTROL_MESSAGE_BYTES: no peer sends it (its encoder refuses), the oversize case is garbage's
      }
    }
  });
  return out;
}
