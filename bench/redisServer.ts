/**
 * A real redis-server for one test file or one bench run: Debian's binary on a free loopback port, with a random
 * password, no persistence, its own temp dir; stopped by pid (never a system service). Lives in bench/ because the
 * bench starts one for remote stages when given no Redis (RemoteStageHost; bench may not import test/). What only
 * the tests do to a server (redis-cli, pause, restart, Cluster mode, maxmemory) is test/helpers/redisServer.ts's
 * subclass.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A loopback port free right now (and, with `alsoFreeAt`, port + alsoFreeAt free too). */
export async function freePort(alsoFreeAt = 0): Promise<number> {
  for (;;) {
    const port = await listenOnce(0);
    if (alsoFreeAt === 0) return port;
    if (port + alsoFreeAt <= 65_535 && (await listenOnce(port + alsoFreeAt).catch(() => null)) !== null) return port;
  }
}

/** Listens on `port` (0: any) on loopback and closes again; resolves with the port it got. */
function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const { port: got } = srv.address() as { port: number };
      srv.close(() => resolve(got));
    });
  });
}

export interface RedisServerOptions {
  readonly password?: string;
  readonly port?: number;
  /** A port that must be free beside the chosen one, at port + this (a Cluster node's bus). */
  readonly alsoFreeAt?: number;
  /** More redis-server arguments, after the ones every server gets; `{dir}` stands for its temp dir. */
  readonly args?: readonly string[];
}

export class RedisServer {
  protected child: ChildProcess | null = null;

  protected constructor(
    readonly port: number,
    readonly password: string,
    private readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const password = options.password ?? randomBytes(12).toString('hex');
    // A port of our choosing can be taken between the probe and the launch, and a Cluster node also binds its bus
    // on port + 10000, which the probe did not check: on "Address already in use", another port.
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await freePort(options.alsoFreeAt));
      const dir = mkdtempSync(join(tmpdir(), 'chorus-redis-'));
      const server = new this(port, password, dir, options);
      try {
        await server.launch();
        return server;
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        const taken = /Address already in use/.test((err as Error).message);
        if (options.port !== undefined || !taken || attempt >= 5) throw err;
      }
    }
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** redis://:password@127.0.0.1:port */
  get url(): string {
    return `redis://:${this.password}@127.0.0.1:${this.port}`;
  }

  /** SIGKILL, as a crash would. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Starts redis-server on this port and dir; resolves once it accepts connections. */
  protected async launch(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--requirepass',
      this.password,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--loglevel',
      'notice',
    ];
    args.push(...(this.options.args ?? []).map((a) => a.replaceAll('{dir}', this.dir)));
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let output = '';
    // Ready when it says so in its log (loglevel notice prints "Ready to accept connections").
    await new Promise<void>((resolve, reject) => {
      const onData = (d: Buffer) => {
        output += d.toString();
        if (output.includes('Ready to accept connections')) {
          child.stdout!.off('data', onData);
          child.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) => reject(new Error(`redis-server exited (${code}): ${output}`));
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', onExit);
    });
    child.stdout!.resume();
    child.stderr!.resume();
  }
}
