/**
 * In-process stand-ins for stage processes, for testing the Orchestrator without forking: each one attaches the
 * real edges main provisioned (shm rings) and answers `add` with scripted chunks, like a stage would.
 */
import { EventEmitter } from 'node:events';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ModelFacts } from '../../src/common/modelFacts.ts';
import type { ChunkBody } from '../../src/common/payloads.ts';
import type { Logger } from '../../src/common/log.ts';
import type { StageWorkerHandle } from '../../src/engine/stageWorkers.ts';
import type { MainToStage, StageBootArgs, StageReadySettings } from '../../src/worker/messages.ts';
import type { StageWorkerEvents } from '../../src/worker/StageWorker.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { Connector } from '../../transport/Connector.ts';
import { createConnector } from '../../transport/createConnector.ts';

/**
 * What a fake stage sends for one `add`: bodies in order, the last one final with this reason; with `open`, none is
 * final and the request stays in flight (a stage that is still working on it).
 */
export type Script = (add: Extract<MainToStage, { type: 'add' }>) => {
  bodies: ChunkBody[];
  finishReason: 'stop' | 'length';
  open?: boolean;
};

export class FakeStageWorker extends EventEmitter<StageWorkerEvents> implements StageWorkerHandle {
  static nextPid = 900_000;
  readonly received: MainToStage[] = [];
  readonly pid: number | null = FakeStageWorker.nextPid++;
  settings: StageReadySettings | null;
  stopped = false;

  private constructor(
    readonly instance: string,
    private readonly stageId: string,
    private readonly connector: Connector,
    private readonly adapter: ChunkTransferAdapter,
    private readonly script: Script | null,
    facts: ModelFacts,
  ) {
    super();
    this.settings = { stageId: stageId, replica: 0, pid: this.pid!, threads: 1, modelFiles: [], loadMs: 0, facts };
  }

  static async start(args: StageBootArgs, facts: ModelFacts, script: Script | null): Promise<FakeStageWorker> {
    const spec = args.graph.stages[args.stageIndex];
    const self = `${spec.stageId}#${args.replica}`;
    const connector = await createConnector(args.graph, self, args.edges);
    const adapter = new ChunkTransferAdapter(connector, self, spec.stageId, () => undefined);
    return new FakeStageWorker(self, spec.stageId, connector, adapter, script, facts);
  }

  send(msg: MainToStage): void {
    this.received.push(msg);
    if (msg.type !== 'add' || !this.script) return;
    const { bodies, finishReason, open = false } = this.script(msg);
    const main = msg.downstream.find((t) => t.stageId === 'main');
    if (!main) return;
    const target = { toInstance: main.instance, toStageId: 'main', keyStage: this.stageId };
    const deadline = Date.now() + 5_000;
    const last = (i: number) => !open && i === bodies.length - 1;
    const puts = bodies.map((body, i) =>
      this.adapter.saveAsync(
        msg.requestId,
        target,
        { final: last(i), body, ...(last(i) ? { finishReason } : {}) },
        deadline,
      ),
    );
    if (open) return;
    void Promise.all(puts).then(() =>
      this.emit('message', { type: 'finished', requestId: msg.requestId, finishReason, numTokens: bodies.length }),
    );
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    await this.adapter.close();
    await this.connector.close();
  }

  kill(): void {
    this.stopped = true;
    void this.adapter.close().then(() => this.connector.close());
    this.emit('died', { code: null, signal: 'SIGKILL' });
  }
}

/** A startWorker for Orchestrator.start: fakes per stage id, recording every start. */
export function fakeWorkers(behaviour: Record<string, { facts: ModelFacts; script?: Script; failBoot?: boolean }>): {
  startWorker: (args: StageBootArgs, log: Logger) => Promise<FakeStageWorker>;
  started: FakeStageWorker[];
} {
  const started: FakeStageWorker[] = [];
  return {
    started,
    async startWorker(args) {
      const stageId = args.graph.stages[args.stageIndex].stageId;
      const b = behaviour[stageId];
      if (!b || b.failBoot) throw new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${stageId} failed to boot (scripted)`);
      const worker = await FakeStageWorker.start(args, b.facts, b.script ?? null);
      started.push(worker);
      return worker;
    },
  };
}
