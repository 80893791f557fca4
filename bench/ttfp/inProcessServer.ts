/**
 * A server under test: the real Orchestrator and the real front end in the calling process, on a loopback port chosen
 * by the OS (`chorus bench --config` calls it in a process of its own per server, serverProcessEntry.ts; the video,
 * mix and soak benches in theirs). The sync variant is the same YAML with only async_chunk turned
 * off (the fifo variant: only scheduling), so both runs use the same models, sizes, seeds and engine settings. A
 * config with remote stages also gets its host B here (RemoteStageHost): a Redis and the `chorus stage`
 * processes, joined before the first request.
 */
import { parseDocument } from 'yaml';
import {
  ChorusError,
  ErrorCodes,
  type Logger,
  Orchestrator,
  parseConfig,
  readConfigText,
  type SchedulingPolicy,
  type StageGraph,
  startServer,
} from '../../src/index.ts';
import { RemoteStageHost, remoteStagesOf, type RemoteStageHostOptions } from './RemoteStageHost.ts';

export interface BenchConfig {
  /** The YAML text as run (async_chunk or scheduling forced when asked). */
  readonly text: string;
  readonly file: string;
  /** Its configHash is the sha256 of `text`: two runs with the same hash ran the same configuration. */
  readonly graph: StageGraph;
}

/** What a bench variant changes in the YAML (top-level keys), nothing else. */
export interface ConfigOverrides {
  readonly async_chunk?: boolean;
  readonly scheduling?: SchedulingPolicy;
  /** false: every stage's engine.prefix_cache off (the cache against itself, --compare-prefix-cache). */
  readonly prefix_cache?: false;
}

/** The YAML with the given top-level keys set (prefix_cache: on every stage's engine), comments and layout kept. */
export function withOverrides(text: string, overrides: ConfigOverrides, file: string): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `${file}: ${doc.errors[0].message}`);
  for (const [key, value] of Object.entries(overrides)) {
    if (key !== 'prefix_cache') {
      doc.set(key, value);
      continue;
    }
    // Only the stages that keep KV take the key (the config refuses it elsewhere).
    const stages = (doc.toJS() as { stages?: { kind?: string }[] }).stages ?? [];
    stages.forEach((stage, i) => {
      if (stage.kind === 'thinker' || stage.kind === 'talker')
        doc.setIn(['stages', i, 'engine', 'prefix_cache'], value);
    });
  }
  return doc.toString();
}

/** Reads the config; `overrides` (when given) replace the file's values. */
export async function readBenchConfig(file: string, overrides?: ConfigOverrides): Promise<BenchConfig> {
  const original = await readConfigText(file);
  const text = overrides ? withOverrides(original, overrides, file) : original;
  // Same file name: relative paths in the YAML (models_dir, model files) resolve exactly as for the original.
  return { text, file, graph: parseConfig(text, file) };
}

export interface InProcessServer {
  readonly baseUrl: string;
  readonly engine: Orchestrator;
  /** Where the remote stages run (null when all are local). */
  readonly remote: string | null;
  close(): Promise<void>;
}

export type InProcessServerOptions = Omit<RemoteStageHostOptions, 'log'> & {
  /**
   * --compare-compiled: this server's stage processes start from the build in dist/ (true) or from the TypeScript
   * sources through tsx (false); absent: as CHORUS_COMPILED says. Main is this process either way.
   */
  readonly compiled?: boolean;
};

export async function startInProcessServer(
  graph: StageGraph,
  log: Logger,
  options: InProcessServerOptions = {},
): Promise<InProcessServer> {
  const { compiled, ...hostOptions } = options;
  const server = await withCompiled(compiled, () => startStages(graph, log, hostOptions));
  try {
    const { app, url } = await startServer(server.engine, { host: '127.0.0.1', port: 0, apiKey: null, logger: log });
    return {
      baseUrl: url,
      engine: server.engine,
      remote: server.host?.description ?? null,
      close: async () => {
        try {
          await app.close();
        } finally {
          await server.close();
        }
      },
    };
  } catch (err) {
    await server.close();
    throw err;
  }
}

/** The engine and, for remote stages, their host, joined; close() stops both. */
async function startStages(graph: StageGraph, log: Logger, options: Omit<RemoteStageHostOptions, 'log'>) {
  const host = remoteStagesOf(graph).length > 0 ? await RemoteStageHost.open(graph, { ...options, log }) : null;
  try {
    const engine = await Orchestrator.start(host?.graph ?? graph, { log: log.child({ component: 'orchestrator' }) });
    try {
      await host?.join(engine);
      return {
        engine,
        host,
        close: async () => {
          try {
            // The engine first: it would report each remote instance that drains and leaves as a lost stage.
            await engine.close();
          } finally {
            await host?.close();
          }
        },
      };
    } catch (err) {
      await engine.close();
      throw err;
    }
  } catch (err) {
    await host?.close(); // idempotent; stops whatever stage processes join() started
    throw err;
  }
}

/** Runs `start` (which forks the stage processes) with CHORUS_COMPILED as `compiled` says, then restores it. */
async function withCompiled<T>(compiled: boolean | undefined, start: () => Promise<T>): Promise<T> {
  if (compiled === undefined) return start();
  const saved = process.env.CHORUS_COMPILED;
  if (compiled) process.env.CHORUS_COMPILED = '1';
  else delete process.env.CHORUS_COMPILED;
  try {
    return await start();
  } finally {
    if (saved === undefined) delete process.env.CHORUS_COMPILED;
    else process.env.CHORUS_COMPILED = saved;
  }
}
