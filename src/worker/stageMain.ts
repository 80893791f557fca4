/**
 * The body of a stage process. Boot: receive the graph and edge table over the control channel, load the model
 * (building it on first use) through the kind's descriptor, attach the edges, post READY with the resolved
 * settings and the model's facts; then run the step loop until shutdown. A failure before READY is reported as
 * boot_failed and the process exits 1; the supervisor never restarts a stage that failed at boot (no crash loop).
 *
 * How a core is built is passed in (src/kinds/stageEntry.ts passes the kind registry): the worker layer knows
 * stage cores only through the StageCore interface.
 */
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import type { StageGraph } from '../common/graph.ts';
import { logger } from '../common/log.ts';
import type { ModelFacts } from '../common/modelFacts.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createConnector } from '../../transport/createConnector.ts';
import type { Connector } from '../../transport/Connector.ts';
import type { ControlChannel } from './control/ControlChannel.ts';
import { MAX_CONTROL_MESSAGE_BYTES, type MainToStage, type StageBootArgs, type StageToMain } from './messages.ts';
import type { StageContext, StageCore } from './StageCore.ts';
import { StageLoop } from './StageLoop.ts';

/** A stage's loaded model and core. */
export interface BuiltStage {
  readonly core: StageCore;
  readonly facts: ModelFacts;
  readonly modelFiles: readonly string[];
  close(): Promise<void>;
}

export type CreateStage = (ctx: StageContext, graph: StageGraph) => Promise<BuiltStage>;

const STATS_INTERVAL_MS = 250;

/** Runs this process as one stage instance, talking to main over `channel`. */
export function runStageProcess(channel: ControlChannel<StageToMain, MainToStage>, createStage: CreateStage): void {
  const post = (msg: StageToMain) => void channel.send(msg);
  // Main died or closed the channel: nothing can reach us any more, so leave (main owns and unlinks the rings).
  channel.onClose(() => process.exit(process.exitCode ?? 0));
  const unsubscribe = channel.onMessage((msg) => {
    unsubscribe();
    if (msg.type !== 'boot' || JSON.stringify(msg).length > MAX_CONTROL_MESSAGE_BYTES) {
      const why = msg.type !== 'boot' ? `expected boot, got ${msg.type}` : 'boot message over the size limit';
      post({ type: 'boot_failed', error: serializeError(new ChorusError(ErrorCodes.STAGE_BOOT, why)) });
      process.exit(1);
    }
    void boot(msg, channel, post, createStage);
  });
}

async function boot(
  args: StageBootArgs,
  channel: ControlChannel<StageToMain, MainToStage>,
  post: (msg: StageToMain) => void,
  createStage: CreateStage,
): Promise<void> {
  const spec = args.graph.stages[args.stageIndex];
  const self = args.instance ?? `${spec.stageId}#${args.replica}`;
  const log = logger.child({ stage: self });
  const started = performance.now();
  let loop: StageLoop | null = null;
  let connector: Connector | null = null;
  try {
    connector = await createConnector(args.graph, self, args.edges);
    const adapter = new ChunkTransferAdapter(connector, self, spec.stageId, () => loop?.wake());
    const ctx: StageContext = {
      spec,
      chunkPolicy: args.graph.chunkPolicy,
      asyncChunk: args.graph.asyncChunk,
      scheduling: args.graph.scheduling,
      adapter,
      post,
      log,
      ecStore: args.graph.ecStore ?? null,
      wake: () => loop?.wake(),
    };
    const { core, facts, modelFiles, close } = await createStage(ctx, args.graph);
    loop = new StageLoop(core, adapter, post, log);
    const running = loop;
    channel.onMessage((msg) => running.deliver(msg));
    const loadMs = Math.round(performance.now() - started);
    post({
      type: 'ready',
      settings: {
        stageId: spec.stageId,
        replica: args.replica,
        pid: process.pid,
        threads: spec.engine.threads,
        modelFiles,
        loadMs,
        facts,
      },
    });
    log.info({ loadMs, facts }, 'stage ready');
    const stats = setInterval(() => post({ type: 'stats', stats: core.stats() }), STATS_INTERVAL_MS).unref();
    await loop.run();
    clearInterval(stats);
    await adapter.close();
    await connector.close();
    await close();
    post({ type: 'drained' });
    log.info('stage drained');
    channel.close();
  } catch (err) {
    log.error({ err }, 'stage failed to boot');
    const wrapped =
      err instanceof ChorusError
        ? err
        : new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${self} failed to boot: ${String(err)}`, { cause: err });
    post({ type: 'boot_failed', error: serializeError(wrapped) });
    await connector?.close().catch(() => undefined);
    process.exitCode = 1;
    channel.close();
  }
}
