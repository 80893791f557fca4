/** Retry-After from when the pipeline should be whole again (src/server/admission/retryAfter.ts). */
import { describe, expect, it } from 'vitest';
import type { StageHealth } from '../../src/common/engine.ts';
import { recoveryMs, retryAfterSeconds } from '../../src/server/admission/retryAfter.ts';

function instance(stageId: string, status: StageHealth['status'], readyInMs?: number): StageHealth {
  return {
    stageId,
    replica: 0,
    status,
    pid: 1,
    restarts: 0,
    inFlight: 0,
    ...(readyInMs !== undefined ? { readyInMs } : {}),
  };
}

describe('recovery time', () => {
  it('is 0 when every stage has a ready instance, restarting replicas or not', () => {
    expect(
      recoveryMs([instance('thinker', 'ready'), instance('talker', 'ready'), instance('talker', 'restarting', 900)]),
    ).toBe(0);
  });

  it('is the slowest stage, each back with its soonest instance', () => {
    const health = [
      instance('thinker', 'ready'),
      instance('talker', 'restarting', 1800),
      instance('talker', 'restarting', 2600),
      instance('code2wav', 'restarting', 700),
    ];
    expect(recoveryMs(health)).toBe(1800);
    expect(retryAfterSeconds(health, 10)).toBe(2);
  });

  it('is unknown when a stage has no instance with an estimate (first start, failed for good)', () => {
    expect(recoveryMs([instance('thinker', 'starting')])).toBeNull();
    expect(retryAfterSeconds([instance('thinker', 'failed')], 10)).toBe(10);
    // One instance with an estimate is enough: the stage is back when it is.
    expect(recoveryMs([instance('talker', 'failed'), instance('talker', 'restarting', 1200)])).toBe(1200);
  });

  it('never says 0 seconds', () => {
    expect(retryAfterSeconds([instance('thinker', 'restarting', 0)], 10)).toBe(1);
  });
});
