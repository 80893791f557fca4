/**
 * A real Prometheus for tests (Debian's `prometheus` package, /usr/bin/prometheus): one server scraping one target
 * every second, with exemplar storage on (so it asks for OpenMetrics, as a production Prometheus with exemplars
 * does), its TSDB in a temp dir, on a free loopback port. stop() ends it by its pid and removes the dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redisServer.ts';

const PROMETHEUS_BIN = '/usr/bin/prometheus';
/** Bounds of the waits below: Prometheus starts in ~1 s here; a scrape comes every second. */
const READY_TIMEOUT_MS = 30_000;
const UNTIL_TIMEOUT_MS = 30_000;

export interface Exemplar {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: string;
  readonly timestamp: number;
}

export class PrometheusServer {
  #output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly url: string,
  ) {
    child.stdout?.on('data', (b: Buffer) => (this.#output += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (this.#output += b.toString()));
  }

  /** Starts Prometheus scraping `target` (host:port) every second; resolves once it is ready. */
  static async start(target: string): Promise<PrometheusServer> {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global: {scrape_interval: 1s, scrape_timeout: 1s}',
        'scrape_configs:',
        '  - job_name: chorus',
        `    static_configs: [{targets: ['${target}']}]`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--enable-feature=exemplar-storage',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const server = new PrometheusServer(child, dir, `http://127.0.0.1:${port}`);
    try {
      await server.#until('ready', async () => (await fetch(`${server.url}/-/ready`)).ok, READY_TIMEOUT_MS);
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** The exemplars Prometheus holds for the series of `query` over the last `sinceMs`. */
  async exemplars(query: string, sinceMs = 300_000): Promise<Exemplar[]> {
    const end = Date.now() / 1000;
    const params = new URLSearchParams({ query, start: String(end - sinceMs / 1000), end: String(end + 60) });
    const res = await fetch(`${this.url}/api/v1/query_exemplars?${params}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { exemplars: Exemplar[] }[] };
    if (body.status !== 'success') throw new Error(`query_exemplars failed: ${body.error ?? res.status}`);
    return (body.data ?? []).flatMap((series) => series.exemplars);
  }

  /** The target's last scrape as Prometheus saw it (health, error), for a failure's message. */
  async targetHealth(): Promise<string> {
    const res = await fetch(`${this.url}/api/v1/targets`);
    const body = (await res.json()) as { data?: { activeTargets?: { health: string; lastError: string }[] } };
    return JSON.stringify(body.data?.activeTargets?.map((t) => ({ health: t.health, lastError: t.lastError })));
  }

  /**
   * Polls `check` (every 200 ms) until it holds; throws after `timeoutMs` with how the last scrape went (a body
   * Prometheus could not parse says so there) and what Prometheus logged.
   */
  async until(what: string, check: () => Promise<boolean>, timeoutMs = UNTIL_TIMEOUT_MS): Promise<void> {
    try {
      await this.#until(what, check, timeoutMs);
    } catch (err) {
      const targets = await this.targetHealth().catch((e: unknown) => `unknown (${String(e)})`);
      throw new Error(`${(err as Error).message}\nscrape targets: ${targets}`, { cause: err });
    }
  }

  async #until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`prometheus exited (${this.child.exitCode}):\n${this.#output}`);
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline)
        throw new Error(`prometheus: no ${what} within ${timeoutMs} ms:\n${this.#output.slice(-4000)}`);
      // Polling an HTTP API: Prometheus has no push notification of a scrape; 200 ms against a 1 s scrape interval.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
