/**
 * SIGTERM / SIGINT mid-answer: the CLI drains, stops every stage process and unlinks every shared-memory segment.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN, isAlive, segmentsOf, stageProcessesOf, killOnFinish } from '../helpers/processes.ts';

describe.each(['SIGTERM', 'SIGINT'] as const)('chorus generate on %s', (signal) => {
  it('leaves no stage process and no /dev/shm segment behind', async () => {
    const child = spawn(
      process.execPath,
      [CHORUS_BIN, 'generate', '--prompt', 'Tell me a very long story.', '--max-tokens', '3000', '--ignore-eos'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
      },
    );
    killOnFinish(child);
    // The first streamed text means every stage is up and a request is in flight.
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`generate exited early with ${code}`)));
    });
    const stages = stageProcessesOf(child.pid!);
    expect(stages.length).toBe(5); // the default pipeline: two encoders, thinker, talker, code2wav
    const segmentsBefore = segmentsOf(child.pid!);
    expect(segmentsBefore.length).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 60_000);
});
