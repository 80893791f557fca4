/**
 * Host B of a scale-out config, on this machine, for the bench: what a user starts next to `chorus serve` when the
 * graph has `placement: remote` stages. A redis-server of its own (unless a Redis was given), then `min_replicas`
 * `chorus stage` processes per remote stage, children of the bench, named bench-0, bench-1, ... They join the
 * in-process engine over Redis like any other host's would; close() stops them (SIGTERM, then SIGKILL) and the
 * redis-server. Every process it starts is announced on diagnostics_channel `chorus:bench:spawned`, so a test can
 * check by pid that none outlived the bench.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { channel } from 'node:diagnostics_channel';
import path from 'node:path';
import {
  ChorusError,
  ErrorCodes,
  loadConfig,
  type Logger,
  type Orchestrator,
  redactUrl,
  repoRoot,
  STAGE_NODE_FLAGS,
  type StageGraph,
} from '../../src/index.ts';
import { RedisServer } from '../redisServer.ts';

/** Published once per process this module starts (the redis-server and each `chorus stage`). */
export const spawnedChannel = channel('chorus:bench:spawned');

export interface SpawnedProcess {
  readonly pid: number;
  readonly role: 'redis-server' | 'stage';
  /** `talker#bench-0` for a stage; the server's address for redis-server. */
  readonly name: string;
}

export interface RemoteStageHostOptions {
  /** The Redis the stages meet on; default env CHORUS_REDIS_URL, else a redis-server of our own for this run. */
  readonly redisUrl?: string;
  /** How long every remote instance may take to join (default 180 s: each loads its own model on a busy machine). */
  readonly joinTimeoutMs?: number;
  readonly log: Logger;
}

const DEFAULT_JOIN_TIMEOUT_MS = 180_000; // 180 s
const STOP_GRACE_MS = 10_000; // 10 s for a drained stage to leave before SIGKILL
const POLL_MS = 100;
const OUTPUT_TAIL_CHARS = 8_000; // what an error quotes of each stage's output

const CHORUS_BIN = path.join(repoRoot(), 'bin', 'chorus.js');

/**
 * The stages of a graph that wait for joined instances (remote ones, and local ones with min_replicas) and how many
 * each must have before the deployment is ready.
 */
export function remoteStagesOf(graph: StageGraph): { stageId: string; minReplicas: number }[] {
  return graph.stages
    .filter((s) => s.placement === 'remote' || s.minReplicas > 0)
    .map((s) => ({ stageId: s.stageId, minReplicas: s.minReplicas }));
}

interface StageProcess {
  readonly instance: string;
  readonly child: ChildProcess;
  /** Resolves when the process is gone (or never started: spawn reports that as 'error', with no 'exit'). */
  readonly exited: Promise<void>;
  readonly ended: () => boolean;
  output(): string;
}

export class RemoteStageHost {
  readonly #stages: StageProcess[] = [];
  #closing: Promise<void> | null = null;
  /** Last resort if the bench exits without close() (process.exit in a signal handler): no orphans. */
  readonly #onExit = () => {
    for (const s of this.#stages) if (!s.ended()) s.child.kill('SIGKILL');
    const pid = this.redis?.pid;
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };

  private constructor(
    /** The graph as the engine must run it: loaded with CHORUS_REDIS_URL set to `redisUrl`. */
    readonly graph: StageGraph,
    readonly redisUrl: string,
    private readonly redis: RedisServer | null,
    private readonly o: RemoteStageHostOptions,
  ) {
    process.once('exit', this.#onExit);
  }

  /**
   * Starts (or picks) the Redis and reloads `graph`'s file with its URL: connector options read CHORUS_REDIS_URL
   * when the config is loaded, so the graph given (loaded before any Redis existed) still points at the YAML's url.
   */
  static async open(graph: StageGraph, o: RemoteStageHostOptions): Promise<RemoteStageHost> {
    const given = o.redisUrl ?? (process.env.CHORUS_REDIS_URL || undefined);
    const redis = given === undefined ? await RedisServer.start() : null;
    try {
      const url = given ?? redis!.url;
      if (redis) spawnedChannel.publish({ pid: redis.pid!, role: 'redis-server', name: `127.0.0.1:${redis.port}` });
      const reloaded = await loadWithRedisUrl(graph.file, url);
      // The stage processes load the file and join only a deployment of the same text (config hash): the engine
      // must run exactly the file, not a variant of it (such as --compare-sync's async_chunk: false).
      if (reloaded.configHash !== graph.configHash)
        throw new ChorusError(
          ErrorCodes.CONFIG_INVALID,
          `${graph.file} has remote stages, which load the file as it is on disk; the bench cannot run a changed ` +
            'copy of it (write the variant to its own file and compare with --compare-config)',
        );
      return new RemoteStageHost(reloaded, url, redis, o);
    } catch (err) {
      await redis?.stop();
      throw err;
    }
  }

  /** Where the stages meet, for the report (the password is never shown). */
  get description(): string {
    const where = this.redis ? `own redis-server on 127.0.0.1:${this.redis.port}` : redactUrl(this.redisUrl);
    return `${this.#stages.map((s) => s.instance).join(', ')} as \`chorus stage\` processes over ${where}`;
  }

  /** Starts `min_replicas` `chorus stage` processes per remote stage and waits until `engine` has them all. */
  async join(engine: Orchestrator): Promise<void> {
    for (const { stageId, minReplicas } of remoteStagesOf(this.graph))
      for (let i = 0; i < minReplicas; i++) this.#startStage(stageId, `bench-${i}`);
    const timeoutMs = this.o.joinTimeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const notReady = engine.health().filter((h) => h.status !== 'ready');
      if (notReady.length === 0) return;
      const dead = this.#stages.find((s) => s.ended());
      if (dead)
        throw this.#error(
          `${dead.instance} exited (${dead.child.exitCode ?? dead.child.signalCode}) before the deployment was ready`,
        );
      if (Date.now() >= deadline) {
        const what = notReady.map((h) => `${h.instance ?? h.stageId} (${h.status})`).join(', ');
        throw this.#error(`${what} never became ready within ${timeoutMs / 1000} s`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Stops the stage processes (they drain and leave), then our redis-server. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all(this.#stages.map((s) => stop(s)));
      await this.redis?.stop();
      process.off('exit', this.#onExit);
    })();
    return this.#closing;
  }

  #startStage(stageId: string, name: string): void {
    const instance = `${stageId}#${name}`;
    const args = [
      ...STAGE_NODE_FLAGS,
      CHORUS_BIN,
      'stage',
      '--config',
      this.graph.file,
      '--stage',
      stageId,
      '--name',
      name,
    ];
    // A child of the bench, as `chorus stage` on host B: the same config file, the Redis through the environment.
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        CHORUS_REDIS_URL: this.redisUrl,
        CHORUS_LOG_LEVEL: process.env.CHORUS_LOG_LEVEL ?? 'warn',
      },
    });
    let out = '';
    const keep = (d: Buffer) => {
      out = (out + d.toString()).slice(-OUTPUT_TAIL_CHARS);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let ended = false;
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      // A process that could not start: the check in join() then names the stage, with this in its output.
      child.once('error', (err) => {
        keep(Buffer.from(`cannot start: ${err.message}\n`));
        if (child.pid === undefined) resolve();
      });
    }).then(() => {
      ended = true;
    });
    this.#stages.push({ instance, child, exited, ended: () => ended, output: () => out });
    if (child.pid !== undefined) spawnedChannel.publish({ pid: child.pid, role: 'stage', name: instance });
    this.o.log.info({ instance, pid: child.pid }, 'started a remote stage process');
  }

  #error(message: string): ChorusError {
    const outputs = this.#stages.map((s) => `--- ${s.instance} (pid ${s.child.pid}) ---\n${s.output().trimEnd()}`);
    return new ChorusError(ErrorCodes.STAGE_FAILED, `remote stages: ${message}\n${outputs.join('\n')}`);
  }
}

async function loadWithRedisUrl(file: string, url: string): Promise<StageGraph> {
  const before = process.env.CHORUS_REDIS_URL;
  process.env.CHORUS_REDIS_URL = url;
  try {
    return await loadConfig(file);
  } finally {
    // Only this load should see it: a second config of the same run (--compare-config) reads its own.
    if (before === undefined) delete process.env.CHORUS_REDIS_URL;
    else process.env.CHORUS_REDIS_URL = before;
  }
}

/** SIGTERM (the stage drains and leaves the deployment), SIGKILL if it is still there after STOP_GRACE_MS. */
async function stop(s: StageProcess): Promise<void> {
  if (s.ended()) return;
  s.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const gone = await Promise.race([
    s.exited.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STOP_GRACE_MS))),
  ]);
  clearTimeout(timer);
  if (gone) return;
  s.child.kill('SIGKILL');
  await s.exited;
}
