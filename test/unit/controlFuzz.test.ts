/**
 * Property-based fuzz (fast-check) of every control message type, from its schema (test/helpers/schemaFuzz.ts):
 * generated valid messages pass the checks and are delivered as sent, over IPC and inside their Redis envelope;
 * the same messages made invalid at one place (NaN, ±Infinity, negative, huge, a fraction, the wrong type, an array
 * or string over its bound, a name not of its form, a field missing or extra, an unknown type) are dropped, counted
 * once each on chorus:control:dropped, and never throw. Then main's side of remote instances (Membership over a
 * stand-in control link, InstanceEvents, the /metrics bridge): what a joined instance reports is handled when valid and
 * never reaches a metric or the router when not. Seeded: a failure prints its seed and path to replay.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { TSchema } from '@sinclair/typebox';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { ControlGuard } from '../../src/control/ControlGuard.ts';
import { mainToStageProblem, stageToMainProblem } from '../../src/control/controlChecks.ts';
import {
  DeploymentRecordSchema,
  HeartbeatSchema,
  packControl,
  RefusalSchema,
  type ControlKind,
} from '../../src/control/wire.ts';
import { bridgeEngineDiagnostics } from '../../src/server/metrics/metrics.ts';
import { StageMetrics } from '../../src/server/metrics/stageMetrics.ts';
import { MAIN_TO_STAGE_SCHEMAS, STAGE_TO_MAIN_SCHEMAS } from '../../src/worker/messages.ts';
import { remoteStagesHarness } from '../helpers/remoteStagesHarness.ts';
import { arbitraryOf, mutated, mutationsOf } from '../helpers/schemaFuzz.ts';

const SEED = 41;
const VALID_RUNS = 150;
const MUTATED_RUNS = 300;

/** How each type travels: its schema, the IPC check, and the Redis channel kind and envelope body. */
interface Route {
  readonly schema: TSchema;
  readonly ipc?: (msg: unknown) => string | null;
  readonly kind: ControlKind;
  readonly body: (msg: unknown) => unknown;
}

const ROUTES: Record<string, Route> = {
  ...Object.fromEntries(
    Object.entries(STAGE_TO_MAIN_SCHEMAS).map(([type, schema]) => [
      `to main: ${type}`,
      {
        schema,
        ipc: stageToMainProblem,
        kind: 'to_main',
        body: (msg: unknown) => ({ from: 'talker#f1', lease: 'l host 1', msg }),
      },
    ]),
  ),
  ...Object.fromEntries(
    Object.entries(MAIN_TO_STAGE_SCHEMAS).map(([type, schema]) => [
      `to a stage: ${type}`,
      { schema, ipc: (m: unknown) => mainToStageProblem(m), kind: 'to_instance', body: (msg: unknown) => msg },
    ]),
  ),
  'to a stage: refused': { schema: RefusalSchema, kind: 'to_instance', body: (msg) => msg },
  heartbeat: { schema: HeartbeatSchema, kind: 'heartbeat', body: (msg) => msg },
  deployment: { schema: DeploymentRecordSchema, kind: 'deployment', body: (msg) => msg },
};

let drops = 0;
const countDrop = () => drops++;

/**
 * Hands `msg` to the guard over IPC (when the type travels there) and over Redis; what it delivered, how many drops
 * it counted, and on how many channels the message went (one the sender's encoder refuses, over 1 MiB, goes on none).
 */
function throughGuard(guard: ControlGuard, route: Route, msg: unknown) {
  const before = drops;
  const delivered: unknown[] = [];
  let channels = 0;
  if (route.ipc) {
    channels++;
    guard.accept('ipc:1', msg, route.ipc, (m) => delivered.push(m));
  }
  let bytes: Buffer | null = null;
  try {
    bytes = packControl(route.kind, route.body(msg) as never); // what a peer writes (it refuses only size)
  } catch {
    bytes = null;
  }
  if (bytes) {
    channels++;
    guard.receive(route.kind, 'fuzz', bytes, (body) => delivered.push(body));
  }
  return { delivered, drops: drops - before, channels };
}

describe('control messages, fuzzed from their schemas (fast-check)', () => {
  const guard = new ControlGuard(pino({ level: 'silent' }));
  beforeAll(() => subscribe(channelNames.controlDropped, countDrop));
  afterAll(() => unsubscribe(channelNames.controlDropped, countDrop));

  for (const [name, route] of Object.entries(ROUTES)) {
    it(`${name}: valid messages pass and are delivered as sent`, () => {
      fc.assert(
        fc.property(arbitraryOf(route.schema), (msg) => {
          const { delivered, drops: dropped, channels } = throughGuard(guard, route, msg);
          expect([dropped, channels]).toEqual([0, route.ipc ? 2 : 1]);
          expect(delivered).toEqual([...(route.ipc ? [msg] : []), route.body(msg)]);
        }),
        { seed: SEED, numRuns: VALID_RUNS },
      );
    });

    it(`${name}: a message made invalid at any one place is dropped and counted, never thrown`, () => {
      const cases = arbitraryOf(route.schema).chain((msg) =>
        fc.constantFrom(...mutationsOf(route.schema, msg)).map((mutation) => ({ msg, mutation })),
      );
      fc.assert(
        fc.property(cases, ({ msg, mutation }) => {
          const { delivered, drops: dropped, channels } = throughGuard(guard, route, mutated(msg, mutation));
          expect(delivered, `${mutation.what} at ${mutation.path.join('.')}`).toEqual([]);
          expect(dropped).toBe(channels);
        }),
        { seed: SEED, numRuns: MUTATED_RUNS },
      );
    });
  }
});

describe("main's side of a remote instance under fuzzed reports", () => {
  // The process's metrics and a server's of its stage instances (the harness's reports are untagged).
  let stages: StageMetrics;
  beforeAll(() => {
    bridgeEngineDiagnostics();
    stages = new StageMetrics(() => undefined);
  });
  afterAll(() => stages.close());

  const reports = ['ready', 'finished', 'stats', 'ec_stored'] as const;
  for (const type of reports) {
    it(`${type}: valid reports are handled, mutated ones never reach the pool, the metrics or the router`, async () => {
      const h = await remoteStagesHarness('talker#f1', 'talker');
      try {
        const schema = STAGE_TO_MAIN_SCHEMAS[type];
        // A ready names its sender's stage (a ready of another stage is refused by name, apart from the schema).
        const valid = arbitraryOf(schema).map((m) =>
          type === 'ready'
            ? { ...(m as object), settings: { ...(m as { settings: object }).settings, stageId: 'talker' } }
            : m,
        );
        fc.assert(
          fc.property(valid, (msg) => {
            const before = h.handled.length;
            h.report(msg);
            expect(h.handled.length - before).toBe(type === 'ready' ? 0 : 1);
            if (type === 'ready') expect(h.handle.settings).toEqual((msg as { settings: unknown }).settings);
          }),
          { seed: SEED, numRuns: VALID_RUNS },
        );
        const cases = valid.chain((msg) =>
          fc.constantFrom(...mutationsOf(schema, msg)).map((mutation) => mutated(msg, mutation)),
        );
        const settings = h.handle.settings;
        fc.assert(
          fc.property(cases, (bad) => {
            const before = h.handled.length;
            h.report(bad);
            expect(h.handled.length).toBe(before);
            expect(h.handle.settings).toBe(settings);
          }),
          { seed: SEED, numRuns: MUTATED_RUNS },
        );
        // An instance main does not know, however valid its report: counted, not handled.
        const before = { handled: h.handled.length, unknown: h.dropped('unknown') };
        h.report({ type: 'finished', requestId: 'r', finishReason: 'stop', numTokens: 1 }, 'talker#nobody');
        expect(h.handled.length).toBe(before.handled);
        expect(h.dropped('unknown')).toBe(before.unknown + 1);
        // The instance's name under another lease (a stale process, or a second one): counted, not handled.
        const fenced = h.dropped('fenced');
        h.report({ type: 'finished', requestId: 'r', finishReason: 'stop', numTokens: 1 }, 'talker#f1', 'other host 2');
        expect(h.handled.length).toBe(before.handled);
        expect(h.dropped('fenced')).toBe(fenced + 1);
        await h.settled(); // a metric that threw would surface here (diagnostics_channel re-throws on the next tick)
      } finally {
        await h.close();
      }
    });
  }
});
