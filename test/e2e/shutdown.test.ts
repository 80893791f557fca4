/**
 * SIGTERM / SIGINT mid-answer: the CLI drains, stops every stage process and unlinks every shared-memory segment.
 * Both run chorus as a user would, from a directory outside the clone (issue 32: every stage died there, tsx being
 * resolved from the working directory): `node <clone>/bin/chorus.js`, and the `chorus` that `npm pack` + `npm install
 * --global` put in a scratch prefix (test/helpers/installedChorus.ts).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { installChorus } from '../helpers/installedChorus.ts';
import { CHORUS_BIN, isAlive, segmentsOf, stageProcessesOf, killOnFinish } from '../helpers/processes.ts';
import { tempDir } from '../helpers/tempDir.ts';

/** The command line and working directory of each way in. */
const ways = {
  clone: () => ({ argv: [process.execPath, CHORUS_BIN], cwd: tempDir('cwd') }),
  installed: () => {
    const { bin, cwd } = installChorus();
    return { argv: [bin], cwd };
  },
};

describe.each([
  ['SIGTERM', 'clone'],
  ['SIGINT', 'installed'],
] as const)('chorus generate on %s (%s, from another directory)', (signal, way) => {
  it('leaves no stage process and no /dev/shm segment behind', async () => {
    const { argv, cwd } = ways[way]();
    const child = spawn(
      argv[0],
      [...argv.slice(1), 'generate', '--prompt', 'Tell me a very long story.', '--max-tokens', '3000', '--ignore-eos'],
      {
        cwd,
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
