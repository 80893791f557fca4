/**
 * `chorus soak --turns` arithmetic on hand-made turns and RSS samples: failed turns, the truncating turns against
 * the 5 turns before each (every turn counted once), against the turns before the first truncation, the cached
 * shares, the last third of the turns against the first ten, and each process's RSS after turn 20 against its last
 * value, with and without its prefix cache. Every expected number is worked out by hand from the definitions.
 */
import { describe, expect, it } from 'vitest';
import type { RssSample } from '../../bench/soak/processRss.ts';
import type { SoakTurn } from '../../bench/soak/SoakConversation.ts';
import { failedTurns, lateTurnsFigures, p50, rssFigures, truncationFigures } from '../../bench/soak/turnsSoakReport.ts';

function turn(session: number, n: number, ttfpMs: number | null, deletedItems = 0, status = 'incomplete'): SoakTurn {
  return {
    session,
    turn: n,
    status,
    code: status === 'failed' ? 'CHORUS_ERR_X' : null,
    ttfpMs,
    e2eMs: 0,
    deletedItems,
    inputTokens: 100,
    cachedTokens: deletedItems > 0 ? 0 : 80,
  };
}

describe('p50', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect(p50([])).toBeNull();
    expect(p50([3, 1, 2])).toBe(2);
    expect(p50([4, 1, 3, 2])).toBe(2.5);
  });
});

describe('failedTurns', () => {
  it('counts every turn that was not answered (completed or incomplete)', () => {
    const turns = [turn(0, 1, 10), turn(0, 2, 10, 0, 'completed'), turn(0, 3, null, 0, 'failed')];
    const refused = { ...turn(0, 4, null), status: 'refused' };
    expect(failedTurns([...turns, refused]).map((t) => t.turn)).toEqual([3, 4]);
  });
});

describe('lateTurnsFigures', () => {
  it('compares the TTFP p50 of the last third of the turns with the first ten, every session counted', () => {
    // 60 turns in two sessions: 100 ms in turns 1-10, 130 ms from 40 (every 8th truncating, at 900 ms), 500 between.
    const turns = [0, 1].flatMap((session) =>
      Array.from({ length: 60 }, (_, i) => {
        const n = i + 1;
        if (n <= 10) return turn(session, n, 100 + session);
        if (n < 40) return turn(session, n, 500);
        return n % 8 === 0 ? turn(session, n, 900, 12) : turn(session, n, 130);
      }),
    );
    const f = lateTurnsFigures(turns)!;
    expect(f.early).toEqual([1, 10]);
    expect(f.late).toEqual([40, 60]);
    expect(f.earlyP50Ms).toBe(100.5); // ten 100s and ten 101s
    expect(f.lateP50Ms).toBe(130); // 6 of 42 at 900
    expect(f.ratio).toBeCloseTo(130 / 100.5, 10);
    expect(f).toMatchObject({ lateTruncating: 6, lateTurns: 42 });
  });

  it('leaves failed turns out, and has no figure for ten turns or fewer', () => {
    const turns = Array.from({ length: 12 }, (_, i) => turn(0, i + 1, 100));
    turns[11] = turn(0, 12, 5, 0, 'failed');
    expect(lateTurnsFigures(turns)).toMatchObject({ late: [11, 12], lateP50Ms: 100, ratio: 1 });
    expect(lateTurnsFigures(turns.slice(0, 10))).toBeNull();
  });
});

describe('truncationFigures', () => {
  it('compares the truncating turns with the 5 turns before each, a turn in two windows counted once', () => {
    // Session 0: turns 1-6 grow (10 ms), turns 7 and 8 truncate (30, 50 ms), turn 9 does not (20 ms).
    const s0 = [1, 2, 3, 4, 5, 6].map((n) => turn(0, n, 10));
    s0.push(turn(0, 7, 30, 2), turn(0, 8, 50, 2), turn(0, 9, 20));
    const f = truncationFigures(s0);
    expect(f.truncatingTurns).toBe(2);
    expect(f.firstTruncatingTurn).toEqual([7]);
    expect(f.afterP50Ms).toBe(40); // (30 + 50) / 2
    // Windows: turns 2-6 (before 7) and 3-7 (before 8): turns 2-7 once each, 10 x5 and 30 -> p50 10.
    expect(f.beforeP50Ms).toBe(10);
    expect(f.ratio).toBe(4);
    expect(f.beforeFirstP50Ms).toBe(10);
    expect(f.ratioToBeforeFirst).toBe(4);
    expect(f.cachedShareAfterP50).toBe(0);
    expect(f.cachedShareOthersP50).toBe(0.8); // turns 2-6 and 9; turn 1 is the first, not counted
  });

  it('keeps sessions apart: a window never reaches into another session', () => {
    const turns = [turn(0, 1, 100), turn(0, 2, 100), turn(1, 1, 10), turn(1, 2, 20, 1)];
    const f = truncationFigures(turns);
    expect(f.firstTruncatingTurn).toEqual([null, 2]);
    expect(f.afterP50Ms).toBe(20);
    expect(f.beforeP50Ms).toBe(10); // session 1's turn 1 only
    expect(f.ratio).toBe(2);
  });

  it('has no ratio without a truncation', () => {
    const f = truncationFigures([turn(0, 1, 10), turn(0, 2, 10)]);
    expect(f).toMatchObject({ truncatingTurns: 0, afterP50Ms: null, ratio: null, ratioToBeforeFirst: null });
  });
});

describe('rssFigures', () => {
  const sample = (turn: number, mib: number, pid = 7, prefixCacheMiB?: number): RssSample => ({
    turn,
    pid,
    mib,
    ...(prefixCacheMiB !== undefined ? { prefixCacheMiB } : {}),
  });

  it('takes the sample after turn 20 as the baseline and the last as the end', () => {
    const f = rssFigures({
      main: [sample(0, 80), sample(19, 95), sample(20, 100), sample(21, 120), sample(40, 105)],
      'thinker#0': [sample(0, 150, 8, 0), sample(20, 200, 8, 50), sample(40, 260, 9, 100)],
    });
    expect(f.main).toMatchObject({ baselineTurn: 20, baselineMiB: 100, lastTurn: 40, lastMiB: 105, maxMiB: 120 });
    expect(f.main.ratio).toBeCloseTo(1.05);
    expect(f.main.prefixCacheMiB).toBeNull();
    expect(f.main.ratioLessPrefixCache).toBeNull();
    expect(f['thinker#0'].ratio).toBeCloseTo(1.3);
    // Less the cache: (260 - 100) / (200 - 50)
    expect(f['thinker#0'].prefixCacheMiB).toEqual({ baseline: 50, last: 100 });
    expect(f['thinker#0'].ratioLessPrefixCache).toBeCloseTo(160 / 150);
    expect(f['thinker#0'].pids).toEqual([8, 9]); // restarted
  });

  it('in a run shorter than the baseline turn, compares with the last sample', () => {
    const f = rssFigures({ main: [sample(0, 80), sample(5, 90)] });
    expect(f.main).toMatchObject({ baselineTurn: 5, lastTurn: 5, ratio: 1 });
  });
});
