/**
 * `chorus serve` as a child process, for a soak that measures the server's memory: main's RSS is then the server
 * alone (a soak running the server in its own process would count its clients and their stored answers as main's,
 * and could not see a server leak under them). Stage pids come from GET /health (`stages[].pid`), as any client
 * could read them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../src/basics.ts';
import { localStages } from '../ttfp/cpuTime.ts';
import type { NamedPid } from './processRss.ts';

// The package's root, found the same way from bench/soak/ and from its compiled copy in dist/bench/soak/.
const CHORUS_BIN = join(repoRoot(), 'bin', 'chorus.js');
const READY_TIMEOUT_MS = 300_000; // 5 min: a first run generates the config's models before it serves
const STOP_TIMEOUT_MS = 60_000; // SIGTERM drains and closes the stages; past this, SIGKILL

/** Requests lost with a stage instance, by what became of them, and the mean pause of the migrated ones. */
export interface SoakMigrations {
  readonly migrated: number;
  readonly refused: number;
  readonly failed: number;
  readonly pauseMsMean: number | null;
}

export class ServerProcess {
  #exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    exited: Promise<number | null>,
  ) {
    this.#exited = exited;
  }

  /** Starts `chorus serve --config FILE --port 0` (in `env`) and resolves once it prints the URL it serves. */
  static async start(config: string, serveArgs: readonly string[] = [], env = process.env): Promise<ServerProcess> {
    const args = [CHORUS_BIN, 'serve', '--config', config, '--port', '0', ...serveArgs];
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The server's log goes on to ours: a chaos run's warnings and a failed start's reason belong in its output.
    child.stderr!.pipe(process.stderr, { end: false });
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      let settled = false;
      const timer = setTimeout(() => fail(`no URL within ${READY_TIMEOUT_MS / 1000} s`), READY_TIMEOUT_MS);
      function fail(why: string): void {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`chorus serve --config ${config}: ${why} (its log is above)`));
      }
      // The listener stays: it keeps the pipe flowing (a full pipe would block the server's writes).
      child.stdout!.on('data', (d: Buffer) => {
        if (settled) return;
        stdout += d.toString();
        const m = /serving (https?:\/\/\S+)/.exec(stdout);
        if (!m) return;
        settled = true;
        clearTimeout(timer);
        resolve(m[1]);
      });
      void exited.then((code) => fail(`exited ${code} before serving`));
    });
    return new ServerProcess(child, url, exited);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** main (this server) and every stage instance with a live process, named stage#replica. */
  async processes(): Promise<NamedPid[]> {
    return [{ name: 'main', pid: this.pid }, ...(await localStages({ baseUrl: this.url, apiKey: null }))];
  }

  /**
   * MiB each stage instance's prefix cache holds (the chorus_prefix_cache_bytes gauge of GET /metrics, from the
   * stages' periodic stats): a cache filling up to its max_bytes grows its process's RSS without leaking.
   */
  async prefixCacheMiB(): Promise<Record<string, number>> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^chorus_prefix_cache_bytes\{stage="([^"]+)"\} (\S+)$/gm))
      out[m[1]] = Math.round((Number(m[2]) / 2 ** 20) * 10) / 10;
    return out;
  }

  /**
   * What the chaos cost in migrations (chorus_migrations_total and chorus_migration_pause_seconds of GET /metrics,
   * summed over stages and reasons): requests replayed, refused and failed, and the pauses the replayed ones saw.
   */
  async migrations(): Promise<SoakMigrations> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    const sum = (re: RegExp) => [...text.matchAll(re)].reduce((total, m) => total + Number(m[1]), 0);
    const outcome = (o: string) =>
      sum(new RegExp(`^chorus_migrations_total\\{[^}]*outcome="${o}"[^}]*\\} (\\S+)$`, 'gm'));
    const pauses = sum(/^chorus_migration_pause_seconds_count\{[^}]*\} (\S+)$/gm);
    const pauseSeconds = sum(/^chorus_migration_pause_seconds_sum\{[^}]*\} (\S+)$/gm);
    return {
      migrated: outcome('migrated'),
      refused: outcome('refused'),
      failed: outcome('failed'),
      pauseMsMean: pauses === 0 ? null : Math.round((1000 * pauseSeconds) / pauses),
    };
  }

  /** SIGTERM (the server drains, then stops its stages and unlinks its shared memory); exit code, or null. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    const code = await this.#exited;
    clearTimeout(timer);
    return code;
  }

  /** After stop(): which of `pids` (its stage processes) still run, and its shared memory still in /dev/shm. */
  leftover(pids: Iterable<number>): { readonly processes: readonly number[]; readonly segments: readonly string[] } {
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    return {
      processes: [...pids].filter(alive),
      segments: readdirSync('/dev/shm').filter((n) => n.startsWith(`chorus-${this.pid}-`)),
    };
  }
}
