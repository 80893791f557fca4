/**
 * Issue 41: a stats report of the right shape with `batchSizes: [NaN]`, published on `chorus:ctl:main` by the stage
 * ACL user, crashed `chorus serve` (prom-client threw from a diagnostics_channel subscriber, re-thrown uncaught on the
 * next tick). Now the guard checks values, not only shapes (the message is dropped and counted as `invalid`), and
 * the metrics take no non-finite number even if one got past it.
 */
import { Packr } from 'msgpackr';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnostics } from '../../src/common/diagnostics.ts';
import { ControlGuard } from '../../src/control/ControlGuard.ts';
import { stageToMainProblem } from '../../src/control/controlChecks.ts';
import { CONTROL_PROTOCOL_VERSION } from '../../src/control/wire.ts';
import { InstanceEvents, type InstanceEventsContext } from '../../src/engine/pool/InstanceEvents.ts';
import type { StageInstance } from '../../src/engine/pool/StageInstance.ts';
import { bridgeEngineDiagnostics, engineMetrics, observeEdgeChunk } from '../../src/server/metrics/metrics.ts';
import { StageMetrics } from '../../src/server/metrics/stageMetrics.ts';

/**
 * The message of the bug, as the stage ACL user published it (msgpack), in the protocol version of now (version 3
 * added the sender's lease; a version 2 message is refused for its version, before its values are read).
 */
const NAN_STATS = new Packr({ useRecords: false }).pack({
  v: CONTROL_PROTOCOL_VERSION,
  ch: 'to_main',
  body: {
    from: 'talker#t1',
    lease: 'a-lease host-t 1',
    msg: {
      type: 'stats',
      stats: { queueDepth: 0, running: 1, batchSize: 1, stepMs: 2.5, batchSizes: [NaN], edgeSamples: [], steps: [] },
    },
  },
});

async function droppedInvalid(): Promise<number> {
  const { values } = await engineMetrics.controlMessagesDropped.get();
  return values.find((v) => v.labels.channel === 'to_main' && v.labels.reason === 'invalid')?.value ?? 0;
}

/** A server's metrics of the untagged reports published here. */
let stages: StageMetrics;

async function batchSamples(stage: string): Promise<number> {
  const { values } = await stages.metrics.stageBatchSize.get();
  return values.find((v) => v.labels.stage === stage && v.metricName === 'chorus_stage_batch_size_count')?.value ?? 0;
}

/** Lets what a diagnostics_channel subscriber threw surface (Node re-throws it on the next tick). */
const nextTicks = () => new Promise((resolve) => setImmediate(resolve));

describe('control values (issue 41)', () => {
  beforeAll(() => {
    bridgeEngineDiagnostics();
    stages = new StageMetrics(() => undefined);
  });
  afterAll(() => stages.close());

  it("drops and counts the bug's NaN stats report before main's metrics see it", async () => {
    // What main does with a report from a remote instance (Membership -> InstanceEvents -> chorus:stage:stats).
    const events = new InstanceEvents({} as InstanceEventsContext);
    const inst = { instance: 'talker#t1', spec: { stageId: 'talker' }, stats: null } as unknown as StageInstance;
    const guard = new ControlGuard(pino({ level: 'silent' }));
    const before = await droppedInvalid();
    let delivered = 0;
    guard.receive('to_main', 'chorus:ctl:main', NAN_STATS, ({ msg }) => {
      delivered++;
      events.onMessage(inst, msg);
    });
    await nextTicks();
    expect(delivered).toBe(0);
    expect(inst.stats).toBeNull();
    expect((await droppedInvalid()) - before).toBe(1);
  });

  it('says which value is wrong', () => {
    const stats = { queueDepth: 0, running: 0, batchSize: 1, stepMs: 1, batchSizes: [NaN], edgeSamples: [] };
    expect(stageToMainProblem({ type: 'stats', stats })).toBe(
      'message (stats).stats.batchSizes.0: Expected integer (got NaN)',
    );
  });

  it('metrics take no non-finite number from a report, even one that got past the guard', async () => {
    const before = await batchSamples('talker#t2');
    expect(() => observeEdgeChunk('talker', 'code2wav', Infinity, 10)).not.toThrow();
    const report = { queueDepth: NaN, batchSizes: [NaN, 2, Infinity], edgeSamples: [], steps: [{ phase: 'run' }] };
    diagnostics.stageStats.publish({ stageId: 'talker', instance: 'talker#t2', ...report });
    await nextTicks();
    expect((await batchSamples('talker#t2')) - before).toBe(1); // the 2 alone
  });
});
