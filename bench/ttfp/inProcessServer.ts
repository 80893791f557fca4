/**
 * The server under test when the bench is given --config: the real Orchestrator and the real front end in this
 * process, on a loopback port chosen by the OS. The sync variant is the same YAML with only async_chunk turned
 * off, so both runs use the same models, sizes, seeds and engine settings.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { parseConfig } from '../../src/config/loadConfig.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { Logger } from '../../src/common/log.ts';
import { startServer } from '../../src/server/app.ts';

export interface BenchConfig {
  /** The YAML text as run (async_chunk forced when asked). */
  readonly text: string;
  readonly file: string;
  readonly graph: StageGraph;
  /** sha256 of `text`: two runs with the same hash ran the same configuration. */
  readonly sha256: string;
}

/** The YAML with async_chunk set, comments and layout kept. */
export function withAsyncChunk(text: string, asyncChunk: boolean, file: string): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `${file}: ${doc.errors[0].message}`);
  doc.set('async_chunk', asyncChunk);
  return doc.toString();
}

/** Reads the config; `asyncChunk` (when given) overrides the file's value. */
export async function readBenchConfig(file: string, asyncChunk?: boolean): Promise<BenchConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new ChorusError(ErrorCodes.CONFIG_NOT_FOUND, `cannot read config ${file}: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (asyncChunk !== undefined) text = withAsyncChunk(text, asyncChunk, file);
  // Same file name: relative paths in the YAML (models_dir, model files) resolve exactly as for the original.
  const graph = parseConfig(text, file);
  return { text, file, graph, sha256: createHash('sha256').update(text).digest('hex') };
}

export interface InProcessServer {
  readonly baseUrl: string;
  readonly engine: Orchestrator;
  close(): Promise<void>;
}

export async function startInProcessServer(graph: StageGraph, log: Logger): Promise<InProcessServer> {
  const engine = await Orchestrator.start(graph, { log: log.child({ component: 'orchestrator' }) });
  try {
    const { app, url } = await startServer(engine, { host: '127.0.0.1', port: 0, apiKey: null, logger: log });
    return {
      baseUrl: url,
      engine,
      close: async () => {
        await app.close();
        await engine.close();
      },
    };
  } catch (err) {
    await engine.close();
    throw err;
  }
}
