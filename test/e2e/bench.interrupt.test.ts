/**
 * A Ctrl-C in the middle of `chorus bench --config` (SIGINT to the terminal's process group: the bench, its server's
 * process and the stage processes): the bench exits 130, its step-trace folder is gone, and so is every process of
 * the group, none of them leaving shared memory behind.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../src/config/paths.ts';
import { waitFor } from '../helpers/engine.ts';
import { CHORUS_BIN, isAlive, segmentsOf } from '../helpers/processes.ts';

/** The pids of a process group's live members. */
function groupMembers(pgid: number): number[] {
  try {
    const out = execFileSync('ps', ['-o', 'pid=', '-g', String(pgid)], { encoding: 'utf8' });
    return out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

describe('chorus bench interrupted', () => {
  it('exits 130 on a Ctrl-C, leaving no temporary folder, process or shared memory', async () => {
    const tmp = await mkdtemp(path.join(tmpdir(), 'chorus-interrupt-'));
    try {
      const config = path.join(repoRoot(), 'configs', 'tiny-omni-text-in.yaml');
      const args = ['bench', '--config', config, '--skip-limit', '--concurrency', '1'];
      args.push('--num-prompts', '200', '--input-len', '8', '--output-len', '8', '--out', path.join(tmp, 'out'));
      // A group of its own, as a terminal's foreground job is: the signal goes to every process in it.
      const bench = spawn(process.execPath, [CHORUS_BIN, ...args], {
        detached: true,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, TMPDIR: tmp },
      });
      const closed = new Promise<number | null>((resolve) => bench.once('close', resolve));
      // The warm-up's progress line: the server and its stages are up, the measured prompts next.
      await new Promise<void>((resolve, reject) => {
        let err = '';
        bench.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          if (/warm-up/.test(err)) resolve();
        });
        void closed.then(() => reject(new Error(`the bench ended before its warm-up:\n${err}`)));
      });
      expect((await readdir(tmp)).filter((n) => n.startsWith('chorus-account-'))).toHaveLength(1);
      const members = groupMembers(bench.pid!);
      expect(members.length).toBeGreaterThan(3); // the bench, its server's process, the stages
      process.kill(-bench.pid!, 'SIGINT');
      expect(await closed).toBe(130);
      await waitFor('every process of the group to exit', () => !members.some(isAlive));
      expect((await readdir(tmp)).filter((n) => n.startsWith('chorus-account-'))).toEqual([]);
      expect(members.flatMap(segmentsOf)).toEqual([]);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }, 120_000);
});
