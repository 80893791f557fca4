import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstPacketBreakdown, formatBreakdown } from '../../bench/ttfp/report/stepBreakdown.ts';
import { stepTraceFile } from '../helpers/stepTraceFile.ts';
import { FLUSH_BYTES, monotonicMs, STEP_TRACE_ENV, StepTrace, type StepRecord } from '../../src/worker/StepTrace.ts';

const step = (t: number, d: number, ...items: [string, number][]): StepRecord => ({ t, d, items });

describe('firstPacketBreakdown', () => {
  // Request "a" reaches the engine at 1000 (its engine TTFP is 50 ms: Code2Wav's step ends at 1050).
  const stages = [
    {
      stage: 'thinker',
      steps: [
        step(990, 15, ['b', 1]), // started before "a" arrived: only its 5 ms inside the window count
        step(1005, 10, ['a', 100], ['b', 1]),
        step(1016, 2, ['a', 1], ['b', 1]),
        step(1060, 2, ['a', 1]), // after the first packet: outside
      ],
    },
    { stage: 'talker', steps: [step(1020, 20, ['a', 101], ['b', 1]), step(1041, 3, ['b', 1])] },
    { stage: 'code2wav', steps: [step(1045, 5, ['a', 2]), step(1070, 5, ['a', 25])] },
  ];

  it("splits each stage's window into the request's own steps, other requests' steps and idle time", () => {
    const b = firstPacketBreakdown(stages, 'a', 'code2wav', 50);
    expect([b.startMs, b.endMs]).toEqual([1000, 1050]);
    const [thinker, talker, code2wav] = b.stages;
    expect(thinker).toMatchObject({ ownSteps: 2, ownMs: 12, ownPositions: 101, ownBatch: [2, 2], otherSteps: 1 });
    expect(thinker.otherMs).toBeCloseTo(5);
    expect(thinker.idleMs).toBeCloseTo(33);
    expect(talker).toMatchObject({ ownSteps: 1, ownMs: 20, ownPositions: 101, otherSteps: 1, otherMs: 3 });
    expect(code2wav).toMatchObject({ ownSteps: 1, ownMs: 5, ownPositions: 2, otherSteps: 0, idleMs: 45 });
    expect(b.path.map((p) => [p.stage, p.atMs])).toEqual([
      ['thinker', 5],
      ['thinker', 16],
      ['talker', 20],
      ['code2wav', 45],
    ]);
    expect(formatBreakdown(b)).toContain('first packet 50.0 ms');
  });

  it('names a request that never reached the last stage', () => {
    expect(() => firstPacketBreakdown(stages, 'b', 'code2wav', 50)).toThrow(/no code2wav step of b/);
  });
});

describe('StepTrace', () => {
  it('is off without its environment variable', () => {
    expect(StepTrace.fromEnv('talker#0', {})).toBeNull();
  });

  it('appends one JSON line per step to a file named by the instance and pid', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'chorus-steps-'));
    try {
      const trace = StepTrace.fromEnv('talker#0', { [STEP_TRACE_ENV]: path.join(dir, 'steps') })!;
      const monotonicBefore = monotonicMs();
      const started = performance.now();
      const monotonicAfter = monotonicMs();
      trace.record(started, [['r1', 120]]);
      trace.record(performance.now(), [
        ['r1', 1],
        ['r2', 1],
      ]);
      trace.close();
      trace.record(performance.now(), [['r3', 1]]); // after close: dropped, not thrown
      const files = await readdir(path.join(dir, 'steps'));
      expect(files).toEqual([`talker_0-${process.pid}.jsonl`]);
      const lines = (await readFile(path.join(dir, 'steps', files[0]), 'utf8')).trim().split('\n');
      const records = lines.map((l) => JSON.parse(l) as StepRecord);
      expect(records.map((r) => r.items)).toEqual([
        [['r1', 120]],
        [
          ['r1', 1],
          ['r2', 1],
        ],
      ]);
      // On the monotonic clock the other processes read too: between the monotonic reads around the step's start
      // (however far apart a busy machine puts them), give or take the offset's own error (well under 0.5 ms).
      expect(records[0].t).toBeGreaterThanOrEqual(monotonicBefore - 0.5);
      expect(records[0].t).toBeLessThanOrEqual(monotonicAfter + 0.5);
      expect(records[0].d).toBeGreaterThanOrEqual(0);
      expect(records[1].t).toBeGreaterThanOrEqual(records[0].t);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps its lines until flushed, writes them at once past FLUSH_BYTES, and on close', async () => {
    const { trace, file, lines } = stepTraceFile('thinker#0');
    trace.mark('add', 'r1');
    trace.record(performance.now(), [['r1', 100]]);
    expect(lines()).toEqual([]);
    trace.flush();
    expect(lines().map((l) => (JSON.parse(l) as { m?: string }).m ?? 'step')).toEqual(['add', 'step']);
    trace.flush(); // nothing gathered: nothing written
    expect(lines()).toHaveLength(2);
    // A busy stage ends no request for a while: its lines go out once they reach FLUSH_BYTES.
    const id = 'r'.repeat(200);
    let marks = 0;
    while (lines().length === 2) {
      trace.mark('in', id, { from: 'thinker' });
      marks++;
    }
    expect(marks).toBeGreaterThan(100); // one write for all of them, not one a line
    expect(readFileSync(file).length).toBeGreaterThanOrEqual(FLUSH_BYTES);
    expect(lines()).toHaveLength(2 + marks);
    trace.mark('out', 'r1', { to: 'talker' });
    trace.close();
    expect(lines()).toHaveLength(3 + marks);
  });

  it('writes what it gathered when its process exits without closing it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'chorus-steps-'));
    try {
      const module = new URL('../../src/worker/StepTrace.ts', import.meta.url).pathname;
      const script = `import { StepTrace } from ${JSON.stringify(module)};
        const trace = StepTrace.fromEnv('talker#0');
        trace.mark('add', 'r1');
        trace.record(performance.now(), [['r1', 7]]);
        process.exit(3);`;
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        env: { ...process.env, [STEP_TRACE_ENV]: dir },
      });
      expect(run.status).toBe(3);
      const [file] = await readdir(dir);
      const lines = (await readFile(path.join(dir, file), 'utf8')).trim().split('\n');
      expect(lines.map((l) => JSON.parse(l) as { m?: string; items?: unknown })).toMatchObject([
        { m: 'add', r: 'r1' },
        { items: [['r1', 7]] },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
