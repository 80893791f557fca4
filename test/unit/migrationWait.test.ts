/**
 * What a migrating request waits for and what it says when its wait runs out (src/engine/requests/migration.ts):
 * the stages of the request with no ready instance, and a message naming them, the deadline and the fix.
 */
import { describe, expect, it } from 'vitest';
import { stagesWithoutReady, waitedOutWhy, type WaitedStage } from '../../src/engine/requests/migration.ts';

const view = (stageId: string, status: string) => ({ spec: { stageId }, status });

describe('stagesWithoutReady', () => {
  it('names the stages of the request that no ready instance serves, whatever the instance names', () => {
    const pool = [view('thinker', 'ready'), view('talker', 'restarting'), view('code2wav', 'ready')];
    expect(stagesWithoutReady(['thinker', 'talker', 'code2wav'], pool)).toEqual(['talker']);
    // A second instance of the stage, ready (a replacement that joined under a new name): nothing is missing.
    expect(stagesWithoutReady(['thinker', 'talker'], [...pool, view('talker', 'ready')])).toEqual([]);
    // Stages the request does not run on do not count; a stage with no instance at all (a lost remote one) does.
    expect(stagesWithoutReady(['thinker', 'vocoder'], pool)).toEqual(['vocoder']);
    expect(stagesWithoutReady(['code2wav'], [view('code2wav', 'hung'), view('code2wav', 'failed')])).toEqual([
      'code2wav',
    ]);
  });
});

describe('waitedOutWhy', () => {
  const remote: WaitedStage = { stageId: 'code2wav', placement: 'remote', joinable: true };
  const local: WaitedStage = { stageId: 'talker', placement: 'local', joinable: false };
  const setting = 'stages.code2wav.engine.migration.max_wait_ms';

  it('says how long it waited, under which setting, for which stage, and how to start one', () => {
    expect(waitedOutWhy(12_345, setting, [remote])).toBe(
      `waited 12.3 s (${setting}) and no instance of stage code2wav became ready: start an instance of stage ` +
        'code2wav (chorus stage --config <file> --stage code2wav on a host of this deployment)',
    );
    const both = waitedOutWhy(30_000, 'chunk_policy.chunk_timeout_ms', [local, { ...local, stageId: 'x' }]);
    expect(both).toMatch(/^waited 30\.0 s \(chunk_policy\.chunk_timeout_ms\) and no instance of stage talker, x /);
    expect(both).toMatch(/stage talker: its replicas here did not come back .*; restart the server; stage x:/);
    expect(waitedOutWhy(1000, setting, [{ ...local, joinable: true }])).toMatch(
      /did not come back \(restarting or failed: see the log\), or chorus stage --config <file> --stage talker/,
    );
  });

  it('tells a wait for room apart from a wait for an instance, saying why the replay was last not admitted', () => {
    expect(waitedOutWhy(1500, setting, [], 'no ready replica of stage talker')).toBe(
      `waited 1.5 s (${setting}): every stage it runs on had a ready instance at the end, but its replay was not ` +
        'admitted (no ready replica of stage talker)',
    );
    expect(waitedOutWhy(1500, setting, [])).toMatch(/not admitted \(no READY woke it while it waited\)$/);
  });
});
