/**
 * Hot reload of the stage graph: the Engine the server holds, over one running pipeline (an Orchestrator) at a time.
 * reload(graph) starts a complete new pipeline for the new graph next to the old one; once it is ready, new
 * requests go to it, while requests in flight finish on the old one, which then drains and stops (its processes
 * and shared memory go with it). A graph that fails to load or to start is refused and the old one keeps serving.
 * Sessions never notice: they hold this object, not a pipeline.
 *
 * Every stage restarts, changed or not. An unchanged Thinker would have to grow edges to the new Talker while it
 * runs, and shm rings are provisioned before a process starts; a fresh pipeline keeps every edge as it was planned
 * (SPSC, owned by main) at the cost of a few seconds of start-up and, while the old one drains, both in memory.
 * Graphs with remote stages (placement: remote, instances joined over Redis) are refused: their instances belong
 * to the deployment on that Redis, and two generations under one key prefix would collide.
 */
import { newEngineId } from '../common/diagnostics.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { Engine } from '../common/engine.ts';
import type { StageGraph } from '../common/graph.ts';
import { logger, type Logger } from '../common/log.ts';
import { Orchestrator, type OrchestratorOptions } from './Orchestrator.ts';

export interface ReloadResult {
  /** Stage ids whose spec differs from the old graph's (added, removed or changed). */
  readonly changedStages: readonly string[];
  readonly startMs: number;
}

export class ReloadableEngine implements Engine {
  #current: Orchestrator;
  readonly #retiring = new Set<Promise<void>>();
  #reloading: Promise<ReloadResult> | null = null;
  #closing: Promise<void> | null = null;

  private constructor(
    first: Orchestrator,
    private readonly options: OrchestratorOptions,
    private readonly drainMs: number,
    private readonly log: Logger,
  ) {
    this.#current = first;
  }

  /** `drainMs`: how long requests in flight on a replaced pipeline may take to finish. */
  static async start(
    graph: StageGraph,
    options: OrchestratorOptions = {},
    drainMs = 30_000,
  ): Promise<ReloadableEngine> {
    const log = options.log ?? logger.child({ component: 'engine' });
    // One id for every pipeline it runs: the server's stage metrics follow the instances across a reload, as before.
    const opts = { ...options, engineId: options.engineId ?? newEngineId() };
    return new ReloadableEngine(await Orchestrator.start(graph, opts), opts, drainMs, log);
  }

  get id(): string {
    return this.#current.id;
  }

  get graph(): StageGraph {
    return this.#current.graph;
  }

  get audioOutput(): Engine['audioOutput'] {
    return this.#current.audioOutput;
  }

  /** The pipeline new requests go to (tests and tools). */
  get current(): Orchestrator {
    return this.#current;
  }

  // The Engine members the current pipeline answers, typed from Engine itself (one signature to change).
  generate: Engine['generate'] = (request) => {
    if (this.#closing) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine is shutting down');
    return this.#current.generate(request);
  };

  promptPositions: NonNullable<Engine['promptPositions']> = (messages) => this.#current.promptPositions(messages);

  /** A replaced pipeline stops (and its Thinker with what it retained): only the current one holds keys. */
  firstOutputEstimate: NonNullable<Engine['firstOutputEstimate']> = () => this.#current.firstOutputEstimate();

  releasePrefix: NonNullable<Engine['releasePrefix']> = (key) => this.#current.releasePrefix(key);

  health: Engine['health'] = () => this.#current.health();

  /** Replaced pipelines still draining. */
  get draining(): number {
    return this.#retiring.size;
  }

  /** Switches to `graph` (see the file header). One reload at a time: a second call while one runs is refused. */
  reload(graph: StageGraph): Promise<ReloadResult> {
    if (this.#closing) return Promise.reject(new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine is shutting down'));
    if (this.#reloading)
      return Promise.reject(
        new ChorusError(ErrorCodes.OVERLOADED, 'a reload is already in progress: wait for it to finish'),
      );
    this.#reloading = this.#swap(graph).finally(() => (this.#reloading = null));
    return this.#reloading;
  }

  async #swap(graph: StageGraph): Promise<ReloadResult> {
    for (const g of [this.#current.graph, graph])
      if (g.stages.some((s) => s.joinable))
        throw new ChorusError(
          ErrorCodes.CONFIG_INVALID,
          `${g.file} has stages that instances on other machines join over Redis: hot reload cannot move them; ` +
            'restart chorus serve (and the chorus stage processes) with the new config',
        );
    const started = performance.now();
    const next = await Orchestrator.start(graph, this.options);
    if (this.#closing) {
      await next.close(0);
      throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine shut down during the reload');
    }
    const old = this.#current;
    this.#current = next;
    const changedStages = changedStageIds(old.graph, graph);
    this.log.info({ file: graph.file, changedStages }, 'reloaded: new requests go to the new pipeline');
    const retiring = old.close(this.drainMs).then(
      () => this.log.info('the replaced pipeline drained and stopped'),
      (err: unknown) => this.log.error({ err }, 'the replaced pipeline failed to stop cleanly'),
    );
    this.#retiring.add(retiring);
    void retiring.finally(() => this.#retiring.delete(retiring));
    return { changedStages, startMs: Math.round(performance.now() - started) };
  }

  close(timeoutMs?: number): Promise<void> {
    this.#closing ??= (async () => {
      await this.#reloading?.catch(() => undefined);
      await Promise.all([this.#current.close(timeoutMs), ...this.#retiring]);
    })();
    return this.#closing;
  }
}

function changedStageIds(a: StageGraph, b: StageGraph): string[] {
  const ids = new Set([...a.stages, ...b.stages].map((s) => s.stageId));
  const spec = (g: StageGraph, id: string) => JSON.stringify(g.stages.find((s) => s.stageId === id) ?? null);
  return [...ids].filter((id) => spec(a, id) !== spec(b, id));
}
