/**
 * Two engines in one process (the bench's async and sync servers) name their stage instances alike: each server's
 * StageMetrics (src/server/metrics/stageMetrics.ts) counts its own engine's reports only, so one engine's totals
 * never move the other's counters. Before, both fed one series: every report of the other engine looked like a
 * restart of "code2wav#0" and was counted again, so an idle server's Code2Wav counters kept climbing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { diagnostics } from '../../src/common/diagnostics.ts';
import { StageMetrics } from '../../src/server/metrics/stageMetrics.ts';

const open: StageMetrics[] = [];
afterEach(() => {
  for (const m of open.splice(0)) m.close();
});

function serverOf(engine: string | undefined): StageMetrics {
  const m = new StageMetrics(() => engine);
  open.push(m);
  return m;
}

function report(engine: string | undefined, framesDecoded: number, states: number): void {
  const code2wav = { framesDecoded, audioFrames: framesDecoded, states };
  diagnostics.stageStats.publish({ stageId: 'code2wav', instance: 'code2wav#0', kind: { code2wav }, engine });
}

async function value(m: StageMetrics, metric: 'code2wavFramesDecoded' | 'code2wavStates'): Promise<number> {
  const { values } = await m.metrics[metric].get();
  return values.find((v) => v.labels.stage === 'code2wav#0')?.value ?? 0;
}

describe('StageMetrics', () => {
  it("counts its own engine's instances only, however the two engines' reports interleave", async () => {
    const [a, b] = [serverOf('engine-a'), serverOf('engine-b')];
    for (let i = 0; i < 3; i++) {
      report('engine-a', 100, 2);
      report('engine-b', 40, 1);
    }
    expect([await value(a, 'code2wavFramesDecoded'), await value(b, 'code2wavFramesDecoded')]).toEqual([100, 40]);
    expect([await value(a, 'code2wavStates'), await value(b, 'code2wavStates')]).toEqual([2, 1]);
    report('engine-a', 130, 0);
    expect([await value(a, 'code2wavFramesDecoded'), await value(b, 'code2wavFramesDecoded')]).toEqual([130, 40]);
    // A death is its engine's too: the other engine's instance of that name still holds its states.
    diagnostics.stageDied.publish({ instance: 'code2wav#0', code: 1, signal: null, engine: 'engine-b' });
    expect([await value(a, 'code2wavStates'), await value(b, 'code2wavStates')]).toEqual([0, 0]);
    report('engine-a', 130, 3);
    diagnostics.stageDied.publish({ instance: 'code2wav#0', code: 1, signal: null, engine: 'engine-b' });
    expect(await value(a, 'code2wavStates')).toBe(3);
  });

  it('an engine without an id counts the untagged reports, and stops counting once closed', async () => {
    const m = serverOf(undefined);
    report(undefined, 10, 0);
    report('engine-a', 500, 0);
    expect(await value(m, 'code2wavFramesDecoded')).toBe(10);
    m.close();
    report(undefined, 20, 0);
    expect(await value(m, 'code2wavFramesDecoded')).toBe(10);
  });
});
