/**
 * A real pipeline behind the real front end, for e2e tests: an Orchestrator over a stage graph (a config under
 * configs/, a path, or a graph already parsed), its server on a free loopback port, and one close for both.
 */
import { isAbsolute, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { StageGraph } from '../../src/common/graph.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';

const CONFIGS = join(import.meta.dirname, '..', '..', 'configs');

/** A server listening on loopback, and its addresses. */
export interface Listening {
  readonly app: FastifyInstance;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  /** `ws://127.0.0.1:<port>/v1/realtime` */
  readonly wsUrl: string;
}

export interface ServedPipeline extends Listening {
  readonly engine: Orchestrator;
  /** The server, then the pipeline (its stage processes and shared memory): nothing new reaches a stopping pipeline. */
  close(): Promise<void>;
}

/** `app` listening on a free loopback port. */
export async function listen(app: FastifyInstance): Promise<Listening> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('server has no address');
  const { port } = address;
  return { app, port, base: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/v1/realtime` };
}

/**
 * Starts the pipeline of `graph` (a file name under configs/, a path, or a parsed graph) and serves it with `options`
 * (no API key unless they name one). A server that fails to listen stops the pipeline it was given.
 */
export async function servePipeline(
  graph: StageGraph | string = 'tiny-omni-text-in.yaml',
  options: ServerOptions = {},
): Promise<ServedPipeline> {
  const resolved =
    typeof graph === 'string' ? await loadConfig(isAbsolute(graph) ? graph : join(CONFIGS, graph)) : graph;
  const engine = await Orchestrator.start(resolved);
  try {
    const listening = await listen(buildServer(engine, { apiKey: null, ...options }));
    return {
      ...listening,
      engine,
      async close() {
        await listening.app.close();
        await engine.close();
      },
    };
  } catch (err) {
    await engine.close();
    throw err;
  }
}
