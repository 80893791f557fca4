import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/commands/config.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { repoRoot } from '../../src/config/paths.ts';

/** Runs `chorus config ...` in-process and captures what it writes. */
async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  const code = await run(argv);
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

afterEach(() => vi.restoreAllMocks());

describe('chorus config check', () => {
  it('summarises a valid graph: stages in start order, edges, connectors, models', async () => {
    const { code, stdout } = await cli('check', path.join(repoRoot(), 'configs', 'tiny-omni-text-in.yaml'));
    expect(code).toBe(0);
    expect(stdout).toContain('tiny-omni-text-in.yaml: OK');
    expect(stdout).toMatch(/^ {2}shm +shm +ringBytes=16777216$/m);
    expect(stdout).toContain('thinker -> talker over shm (thinker -> talker)');
    expect(stdout).toContain('talker -> code2wav over shm (talker -> code2wav)');
    expect(stdout).toMatch(/talker .*\n.*model: generated tiny seed 0: .*conditionDim=512/);
    expect(stdout.indexOf('  thinker ')).toBeLessThan(stdout.indexOf('  code2wav '));
  });

  it('prints every problem and exits 1 on an invalid graph', async () => {
    const dir = tempDir('cli');
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'stages:\n  - stage_id: a\n    kind: thinker\n    replicas: 0\n    colour: red\n');
    const { code, stdout, stderr } = await cli('check', file);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(`${file}:4 stages[0].replicas: must be an integer >= 1, got 0`);
    expect(stderr).toContain(`${file}:5 stages[0].colour: unknown key "colour"`);
  });

  it('--json prints the resolved graph', async () => {
    const { code, stdout } = await cli('check', path.join(repoRoot(), 'configs', 'text-only.yaml'), '--json');
    expect(code).toBe(0);
    expect(JSON.parse(stdout).stages.map((s: { stageId: string }) => s.stageId)).toEqual(['thinker']);
  });

  it('refuses bad connector options, saying why, and never echoes a password', async () => {
    const dir = tempDir('cli');
    const file = path.join(dir, 'redis.yaml');
    writeFileSync(
      file,
      'connectors:\n  r: {kind: redis, options: {password: hunter2, key_prefx: x}}\n' +
        '  s: {kind: shm, options: {ring_byte: 1MiB}}\n' +
        'stages:\n  - {stage_id: t, kind: thinker, final_output: true, final_output_type: text, inputs: []}\n',
    );
    const { code, stdout, stderr } = await cli('check', file);
    expect(code).not.toBe(0);
    expect(stderr).toContain(`${file}:2 connectors.r.options.key_prefx: unknown key "key_prefx" (did you mean`);
    expect(stderr).toContain(
      `${file}:3 connectors.s.options.ring_byte: unknown key "ring_byte" (did you mean "ring_bytes"?)`,
    );
    expect(stdout + stderr).not.toContain('hunter2');
  });

  it('rejects an unknown verb with usage (exit 2)', async () => {
    const { code, stderr } = await cli('lint', 'x.yaml');
    expect(code).toBe(2);
    expect(stderr).toContain('usage: chorus config check');
  });
});
