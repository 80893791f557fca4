/**
 * A stage instance in the test process: the real StageLoop over the core a kind's descriptor builds, with the
 * real connector and adapter on the edges main provisioned, as src/worker/stageMain.ts boots one in its own
 * process (minus the process: no IPC, no exit). For kinds that live in the test tree (registerStageKind).
 */
import { EventEmitter } from 'node:events';
import type { ModelFacts } from '../../src/common/modelFacts.ts';
import { logger } from '../../src/common/log.ts';
import { createStage } from '../../stages/registry.ts';
import type { StageWorkerHandle } from '../../src/engine/stageWorkers.ts';
import type { MainToStage, StageBootArgs, StageReadySettings, StageToMain } from '../../src/worker/messages.ts';
import type { StageContext } from '../../src/worker/StageCore.ts';
import { StageLoop } from '../../src/worker/StageLoop.ts';
import type { StageWorkerEvents } from '../../src/worker/StageWorker.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createConnector } from '../../transport/createConnector.ts';

const STATS_INTERVAL_MS = 50;

export class InProcessStage extends EventEmitter<StageWorkerEvents> implements StageWorkerHandle {
  static nextPid = 800_000;
  readonly pid = InProcessStage.nextPid++;
  settings: StageReadySettings | null = null;
  /** Every message main sent it, in order. */
  readonly received: MainToStage[] = [];
  private loop: StageLoop | null = null;
  private running: Promise<void> = Promise.resolve();
  private closeAll: () => Promise<void> = async () => {};

  static async start(args: StageBootArgs): Promise<InProcessStage> {
    const self = new InProcessStage();
    await self.boot(args);
    return self;
  }

  private async boot(args: StageBootArgs): Promise<void> {
    const spec = args.graph.stages[args.stageIndex];
    const instance = args.instance ?? `${spec.stageId}#${args.replica}`;
    const log = logger.child({ stage: instance });
    const post = (msg: StageToMain) => queueMicrotask(() => this.emit('message', msg));
    const connector = await createConnector(args.graph, instance, args.edges);
    const adapter = new ChunkTransferAdapter(connector, instance, spec.stageId, () => this.loop?.wake());
    const ctx: StageContext = {
      spec,
      chunkPolicy: args.graph.chunkPolicy,
      asyncChunk: args.graph.asyncChunk,
      scheduling: args.graph.scheduling,
      adapter,
      post,
      log,
      wake: () => this.loop?.wake(),
    };
    const built = await createStage(ctx, args.graph);
    const loop = new StageLoop(built.core, adapter, post, log);
    this.loop = loop;
    const stats = setInterval(() => post({ type: 'stats', stats: built.core.stats() }), STATS_INTERVAL_MS);
    this.running = loop.run().finally(() => clearInterval(stats));
    this.closeAll = async () => {
      clearInterval(stats);
      await adapter.close();
      await connector.close();
      await built.close();
    };
    this.settings = {
      stageId: spec.stageId,
      replica: args.replica,
      pid: this.pid,
      threads: 1,
      modelFiles: [...built.modelFiles],
      loadMs: 0,
      facts: built.facts as ModelFacts,
    };
  }

  send(msg: MainToStage): void {
    this.received.push(msg);
    this.loop?.deliver(msg);
  }

  async shutdown(drainMs: number): Promise<void> {
    this.loop?.deliver({ type: 'shutdown', drainMs });
    await this.running;
    await this.closeAll();
  }

  kill(): void {
    this.loop?.stop();
    void this.running.then(() => this.closeAll());
    this.emit('died', { code: null, signal: 'SIGKILL' });
  }
}
