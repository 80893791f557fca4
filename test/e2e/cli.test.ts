/**
 * The chorus command line as a user meets it: --help on every command and subcommand prints usage and exits 0;
 * an unknown flag or a bad value exits 2 with the usage, before any stage starts; so does a port in use.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN } from '../helpers/processes.ts';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function chorus(...args: string[]): Promise<Run> {
  return chorusWith({}, ...args);
}

function chorusWith(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHORUS_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    // 'close', not 'exit': a process may exit before its pipes are read to their end (seen in CI: a --help that
    // exited 0 with its usage still unread, stdout ''). Nothing here leaves a grandchild holding the pipes.
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

const helps = [
  ['--help'],
  ['serve', '--help'],
  ['generate', '--help'],
  ['bench', '--help'],
  ['bench', 'limit', '--help'],
  ['bench', 'transport', '-h'],
  ['models', '--help'],
  ['models', 'build', '--help'],
  ['config', 'check', '--help'],
  ['soak', '--help'],
];

describe('chorus --help', () => {
  it('prints usage and exits 0 for every command and subcommand', async () => {
    const results = await Promise.all(helps.map((args) => chorus(...args)));
    results.forEach((r, i) => {
      expect({ args: helps[i], code: r.code }).toEqual({ args: helps[i], code: 0 });
      expect(r.stdout).toMatch(/^usage:\s+chorus/);
      expect(r.stderr).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    });
  });
});

describe('bad command lines', () => {
  const bad = [
    [['serve', '--no-such-flag'], /Unknown option '--no-such-flag'/],
    [['serve', '--port', 'eighty'], /--port must be an integer >= 0, got "eighty"/],
    [['generate', '--prompt', 'hi', '--max-tokens', 'abc'], /--max-tokens must be an integer >= 1, got "abc"/],
    [['generate'], /--prompt TEXT is required/],
    [['models', 'build', '--colour'], /Unknown option '--colour'/],
    [['bench', '--protocol', 'grpc'], /--protocol must be realtime or chat/],
    [['soak', '--kill-stage', 'talker'], /--kill-stage takes NAME@SECONDS/],
    [['soak', '--turns', '30', '--fuzz'], /--fuzz is for the timed soak, not --turns/],
    [['soak', '--turns', '30', '--thinker-positions', '8'], /--thinker-positions must be an integer >= 64/],
    [['soak', '--out', 'soak.json'], /--out goes with --turns/],
  ] as const;

  it('exit 2 with the message and the usage, without starting the pipeline', async () => {
    const results = await Promise.all(bad.map(([args]) => chorus(...args)));
    results.forEach((r, i) => {
      const [args, message] = bad[i];
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(/usage:\s+chorus/);
      expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
    });
  });
});

describe('chorus serve on a port in use', () => {
  it('says so and exits 1 before any stage starts', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen({ host: '127.0.0.1', port: 0 }, resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      // At info level every stage process logs as it boots ({"stage":"thinker#0",...}): none may have.
      const args = ['serve', '--config', 'configs/tiny-omni-text-in.yaml', '--port', String(port)];
      const r = await chorusWith({ CHORUS_LOG_LEVEL: 'info' }, ...args);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port} (EADDRINUSE): choose another --port or --host`);
      expect(r.stderr).not.toMatch(/"stage":"thinker#0"/);
    } finally {
      taken.close();
    }
  });
});
