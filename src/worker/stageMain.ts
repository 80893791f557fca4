/**
 * Entry point of a stage process (forked by StageWorker). Boot: receive the graph and edge table, load the model
 * (building it on first use), attach the edge rings, post READY with the resolved settings; then run the step loop
 * until shutdown. A failure before READY is reported as boot_failed and the process exits 1; the supervisor never
 * restarts a stage that failed at boot (no crash loop).
 */
import { ChorusError, ErrorCodes, serializeError } from '../errors.ts';
import { logger } from '../log.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createConnector } from '../../transport/createConnector.ts';
import type { Connector } from '../../transport/Connector.ts';
import { createStageCore } from './createStageCore.ts';
import { MAX_CONTROL_MESSAGE_BYTES, type MainToStage, type StageBootArgs, type StageToMain } from './messages.ts';
import { StageLoop } from './StageLoop.ts';

function post(msg: StageToMain): void {
  // The channel may be gone if main died; then this process is about to exit anyway.
  if (process.connected) process.send!(msg);
}

async function boot(args: StageBootArgs): Promise<void> {
  const spec = args.graph.stages[args.stageIndex];
  const self = `${spec.stageId}#${args.replica}`;
  const log = logger.child({ stage: self });
  const started = performance.now();
  let loop: StageLoop | null = null;
  let connector: Connector | null = null;
  try {
    connector = await createConnector(args.graph, self, args.edges);
    const adapter = new ChunkTransferAdapter(connector, self, spec.stageId, () => loop?.wake());
    const { core, modelFiles, close } = await createStageCore(args.graph, spec, adapter, post, log);
    loop = new StageLoop(core, adapter, post, log);
    const pending: MainToStage[] = [];
    process.on('message', (msg: MainToStage) => (loop ? loop.deliver(msg) : pending.push(msg)));
    post({
      type: 'ready',
      settings: { stageId: spec.stageId, replica: args.replica, pid: process.pid, threads: spec.engine.threads, modelFiles, loadMs: Math.round(performance.now() - started) },
    });
    log.info({ loadMs: Math.round(performance.now() - started) }, 'stage ready');
    const stats = setInterval(() => post({ type: 'stats', stats: core.stats() }), 250).unref();
    await loop.run();
    clearInterval(stats);
    await adapter.close();
    await connector.close();
    await close();
    post({ type: 'drained' });
    log.info('stage drained');
    process.disconnect?.();
  } catch (err) {
    log.error({ err }, 'stage failed to boot');
    const wrapped = err instanceof ChorusError ? err : new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${self} failed to boot: ${String(err)}`, { cause: err });
    post({ type: 'boot_failed', error: serializeError(wrapped) });
    await connector?.close().catch(() => undefined);
    process.exitCode = 1;
    process.disconnect?.();
  }
}

// Main died or closed the channel: nothing can reach us any more, so leave (the supervisor cleans shared memory).
process.on('disconnect', () => process.exit(process.exitCode ?? 0));

process.once('message', (msg: MainToStage) => {
  if (msg.type !== 'boot') {
    post({ type: 'boot_failed', error: serializeError(new ChorusError(ErrorCodes.STAGE_BOOT, `expected boot, got ${msg.type}`)) });
    process.exit(1);
  }
  if (JSON.stringify(msg).length > MAX_CONTROL_MESSAGE_BYTES) process.exit(1);
  void boot(msg);
});
