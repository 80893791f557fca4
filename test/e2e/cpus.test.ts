/**
 * `engine.cpus` on a real deployment (`chorus serve` as users run it): the stage that asks for a core of its own
 * (`auto`: the last one) runs on it, every thread of it, and main and the other stages run on the cores left; the
 * pipeline answers as before. On a one-core machine no core is left to give: everything runs on the one.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../src/config/paths.ts';
import { chat, health, startServe } from '../helpers/deployment.ts';
import { tempDir } from '../helpers/tempDir.ts';

/** Cpus_allowed_list of a /proc status file, expanded ("0-2,5" -> [0, 1, 2, 5]). */
function allowedCpus(statusFile: string): number[] {
  const list = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(statusFile, 'utf8'))![1];
  return list.split(',').flatMap((part) => {
    const [a, b] = part.split('-').map(Number);
    return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
}

/** The cores each thread of a process may run on. */
function threadCpus(pid: number): number[][] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => allowedCpus(`/proc/${pid}/task/${tid}/status`));
}

describe('engine.cpus', () => {
  it('runs the Talker on a core of its own and main and the other stages on the others', async () => {
    const cores = os.availableParallelism();
    const own = cores - 1;
    const config = path.join(tempDir('cpus'), 'pinned.yaml');
    const source = readFileSync(path.join(repoRoot(), 'configs', 'tiny-omni-text-in.yaml'), 'utf8');
    const marker = '  - stage_id: talker\n    kind: talker\n    model: {}\n    engine:\n';
    expect(source).toContain(marker);
    writeFileSync(config, source.replace(marker, `${marker}      cpus: auto\n`));
    const rest = cores < 2 ? [0] : Array.from({ length: cores - 1 }, (_, c) => c);
    const serve = await startServe(config, {});
    try {
      await expect.poll(async () => (await health(serve.url)).ready, { timeout: 60_000 }).toBe(true);
      const stages = (await health(serve.url)).stages;
      expect(stages.map((s) => s.stage_id).sort()).toEqual(['code2wav', 'talker', 'thinker']);
      for (const s of stages) {
        const expected = s.stage_id === 'talker' && cores >= 2 ? [own] : rest;
        for (const cpus of threadCpus(s.pid!)) expect(cpus, s.stage_id).toEqual(expected);
        // And its garbage collector works on its own thread, not on helpers beside it, over a heap that may grow 4x
        // between mark-compacts (STAGE_NODE_FLAGS).
        const argv = readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0');
        expect(argv, s.stage_id).toContain('--single-threaded-gc');
        expect(argv, s.stage_id).toContain('--heap-growing-percent=300');
      }
      for (const cpus of threadCpus(serve.child.pid!)) expect(cpus, 'main').toEqual(rest);
      const answer = await chat(serve.url, 'Hello', { max_tokens: 8 });
      expect(answer.error).toBeNull();
      expect(answer.text.length).toBeGreaterThan(0);
      expect(answer.pcm16.length).toBeGreaterThan(0);
    } finally {
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    }
  }, 120_000);
});
