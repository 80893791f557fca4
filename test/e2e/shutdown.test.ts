/**
 * SIGTERM / SIGINT mid-answer: the CLI stops every stage process and unlinks every shared-memory segment (`chorus
 * generate` at once: the answer is the signaller's own; `chorus serve` after draining the answers in flight);
 * also when the signal reaches the whole process group (a terminal's Ctrl-C, a service manager's stop), the stage
 * processes included, and for `chorus serve` with an answer in flight.
 * Both run chorus as a user would, from a directory outside the clone (issue 32: every stage died there, tsx being
 * resolved from the working directory): `node <clone>/bin/chorus.js`, and the `chorus` that `npm pack` + `npm install
 * --global` put in a scratch prefix (test/helpers/installedChorus.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe } from '../helpers/deployment.ts';
import { installChorus } from '../helpers/installedChorus.ts';
import {
  CHORUS_BIN,
  commandLineOf,
  isAlive,
  segmentsOf,
  stageProcessesOf,
  killOnFinish,
} from '../helpers/processes.ts';
import { tempDir } from '../helpers/tempDir.ts';

// `npm pack` of the tier's dist/ (test/buildDist.ts) and its install: once for the file, before any test starts.
let installed: ReturnType<typeof installChorus>;
beforeAll(() => {
  installed = installChorus();
}, 180_000);
afterAll(() => installed?.remove());

/**
 * The command line, working directory and environment of each way in. The clone's runs its sources through tsx
 * (CHORUS_COMPILED=0: the tier runs other commands compiled, test/buildDist.ts), as a checkout does; the built clone
 * runs the clone's dist/ (CHORUS_COMPILED=1, as `npm start` does), and boots its five stages on about half the CPU.
 */
const ways = {
  clone: () => ({ argv: [process.execPath, CHORUS_BIN], cwd: tempDir('cwd'), env: { CHORUS_COMPILED: '0' } }),
  'built clone': () => ({ argv: [process.execPath, CHORUS_BIN], cwd: tempDir('cwd'), env: { CHORUS_COMPILED: '1' } }),
  installed: () => ({ argv: [installed.bin], cwd: installed.cwd, env: {} }),
};

describe('the installed package', () => {
  it('ships compiled JavaScript and no TypeScript, tests, bench results or models', () => {
    const files = readdirSync(installed.pkg, { recursive: true, encoding: 'utf8' }).filter(
      (f) => !f.startsWith('node_modules') && !f.startsWith(join('native', 'build')),
    );
    expect(files).toContain(join('dist', 'src', 'cli', 'main.js'));
    expect(files).toContain(join('dist', 'stages', 'stageEntry.js'));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((f) => /^(test|bench\/results|\.chorus)\b/.test(f))).toEqual([]);
  });

  it('resolves `chorus` and `chorus/basics` to its public entry, compiled, with type declarations', () => {
    const app = join(installed.cwd, 'app');
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    symlinkSync(installed.pkg, join(app, 'node_modules', 'chorus'), 'dir');
    const script =
      "const c = await import('chorus'); const b = await import('chorus/basics'); " +
      "console.log(import.meta.resolve('chorus'), import.meta.resolve('chorus/basics'), " +
      'typeof c.Orchestrator, typeof c.loadConfig, typeof c.startServer, b.ChorusError === c.ChorusError)';
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
    const [entry, basics, ...rest] = out.trim().split(' ');
    expect(entry.endsWith('/dist/src/index.js')).toBe(true);
    expect(basics.endsWith('/dist/src/basics.js')).toBe(true);
    expect(rest).toEqual(['function', 'function', 'function', 'true']);
    expect(readdirSync(join(installed.pkg, 'dist', 'src'))).toEqual(
      expect.arrayContaining(['index.d.ts', 'basics.d.ts']),
    );
  });
});

describe.each([
  ['SIGTERM', 'clone', 'main'],
  ['SIGINT', 'installed', 'main'],
  // The group's signal reaches every stage process itself: no loader of the clone's (tsx installs no signal handler
  // when imported) takes part, so the group case runs built; the tsx stages' own exit is the first case's.
  ['SIGINT', 'built clone', 'process group'],
] as const)('chorus generate on %s (%s, from another directory) to %s', (signal, way, to) => {
  it('leaves no stage process and no /dev/shm segment behind', async () => {
    const { argv, cwd, env } = ways[way]();
    const child = spawn(
      argv[0],
      [...argv.slice(1), 'generate', '--prompt', 'Tell me a very long story.', '--max-tokens', '3000', '--ignore-eos'],
      {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CHORUS_LOG_LEVEL: 'warn', ...env },
        detached: to === 'process group', // a group of its own, as a terminal's foreground job has
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
    const flags = '--single-threaded-gc --heap-growing-percent=300';
    if (way !== 'clone') {
      // Every stage process runs the compiled entry, with no tsx loader (the package has no sources; the built clone
      // runs its dist/).
      for (const pid of stages)
        expect(commandLineOf(pid)).toMatch(new RegExp(`^\\S*node ${flags} \\S+/dist/stages/stageEntry\\.js `));
    } else {
      // The clone's: the sources, through the tsx loader resolved from the clone (issue 32).
      for (const pid of stages)
        expect(commandLineOf(pid)).toMatch(
          new RegExp(`^\\S*node --import \\S+/tsx/\\S+ ${flags} \\S+/stages/stageEntry\\.ts `),
        );
    }
    const segmentsBefore = segmentsOf(child.pid!);
    expect(segmentsBefore.length).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    if (to === 'process group') process.kill(-child.pid!, signal);
    else child.kill(signal);
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 60_000);
});

describe('chorus serve on SIGTERM to its whole process group (a service manager stopping it)', () => {
  it('drains the answer in flight, then leaves no stage process and no /dev/shm segment behind', async () => {
    // A group of its own, as a service's processes are.
    const { child, url, exited } = await startServe(
      join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml'),
      {},
      { detached: true },
    );
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'Tell me a story.' }],
        max_tokens: 200,
        ignore_eos: true,
        stream: true,
      }),
    });
    const reader = res.body!.getReader();
    await reader.read(); // the first streamed bytes: every stage is up and the answer is in flight
    const stages = stageProcessesOf(child.pid!);
    expect(stages.length).toBe(3);
    expect(segmentsOf(child.pid!).length).toBeGreaterThan(0);
    process.kill(-child.pid!, 'SIGTERM');
    // The answer in flight ends as it would have (its whole length), not cut by the signal.
    let body = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) body += new TextDecoder().decode(r.value);
    expect(body).toContain('"finish_reason":"length"');
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 60_000);
});
