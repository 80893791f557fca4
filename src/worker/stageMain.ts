/**
 * The body of a stage process. Boot: receive the graph and edge table over the control channel, load the model
 * (building it on first use) through the kind's descriptor, attach the edges, post READY with the resolved
 * settings and the model's facts; then run the step loop until shutdown. A failure before READY is reported as
 * boot_failed and the process exits 1; the supervisor never restarts a stage that failed at boot (no crash loop).
 *
 * How a core is built is passed in (stages/stageEntry.ts passes the kind registry): the worker layer knows
 * stage cores only through the StageCore interface.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { cpusFor, pinThisProcess } from '../common/affinity.ts';
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import type { StageGraph } from '../common/graph.ts';
import { logger, type Logger } from '../common/log.ts';
import { enterSchedIdle } from '../common/schedIdle.ts';
import { CpuWakeupLatency } from '../common/cpuWakeupLatency.ts';
import type { ModelFacts } from '../common/modelFacts.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createConnector } from '../../transport/createConnector.ts';
import { addon } from '../../transport/shm/binding.ts';
import { LIGHT_LOAD_MAX_LIVE } from '../sched/chunkPolicy.ts';
import type { Connector } from '../../transport/Connector.ts';
import type { ControlChannel } from './ControlChannel.ts';
import { MAX_CONTROL_MESSAGE_BYTES, type MainToStage, type StageBootArgs, type StageToMain } from './messages.ts';
import { KEEP_WARM_WINDOW_MS } from './IdleWarmth.ts';
import type { StageContext, StageCore } from './StageCore.ts';
import { StageLoop } from './StageLoop.ts';
import { StepTrace } from './StepTrace.ts';
import { StageSpans } from '../tracing/StageSpans.ts';
import { startTracing, type Tracing } from '../tracing/tracing.ts';
import { modelBuildMsHere } from '../common/modelBuildTime.ts';

/** A stage's loaded model and core. */
export interface BuiltStage {
  readonly core: StageCore;
  readonly facts: ModelFacts;
  readonly modelFiles: readonly string[];
  close(): Promise<void>;
}

export type CreateStage = (ctx: StageContext, graph: StageGraph) => Promise<BuiltStage>;

const STATS_INTERVAL_MS = 250;

/**
 * Lowers this process's priority by `increment` nice levels (relative: a stage started under `nice` stays below it).
 * Linux keeps a nice value per thread, and a new thread inherits its creator's: every thread that exists now (the
 * main thread, V8's GC helpers, libuv's pool, the module loader's) is lowered, and onnxruntime's threads, created
 * when the model loads after this, inherit it. Failing to change it is not a reason to fail the stage.
 */
function lowerPriority(increment: number, log: Logger): void {
  if (increment <= 0) return;
  const target = Math.min(19, getPriority() + increment);
  let threads: number[] = [0]; // 0: the calling thread (the whole process where there is no /proc)
  try {
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    // not Linux: the process's priority is all there is
  }
  for (const tid of threads) {
    try {
      setPriority(tid, target);
    } catch (err) {
      // A thread that exited meanwhile (ESRCH) is no loss; anything else is worth a line.
      if ((err as { info?: { code?: string } }).info?.code !== 'ESRCH')
        log.warn({ err, increment }, "could not lower a stage thread's priority (stage_nice)");
    }
  }
}

/** engine.sched: idle, before the model's threads start (they inherit it); asked for, so failing fails the boot. */
function enterIdleClass(self: string): void {
  try {
    enterSchedIdle(process.pid);
  } catch (err) {
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    throw new ChorusError(
      ErrorCodes.STAGE_BOOT,
      `stage ${self} could not enter the idle scheduling class (engine.sched: idle): ${why}; remove the key`,
      { cause: err },
    );
  }
}

/** Each input edge's connector kind by upstream stage id, for the spans of its chunk hops. */
function edgeTransports(graph: StageGraph, spec: StageGraph['stages'][number]): Map<string, string> {
  return new Map(spec.inputs.map((i) => [i.from, graph.connectors[i.connector]?.kind ?? 'unknown']));
}

/** How a stage process runs beyond its boot message. */
export interface StageProcessOptions {
  /**
   * It serves on a machine of its own (`chorus stage`): there it holds the config's cpu_wakeup_latency_us while it
   * has requests, as main does on its machine (src/common/cpuWakeupLatency.ts). A stage main forks shares main's.
   */
  readonly ownMachine?: boolean;
}

/** Runs this process as one stage instance, talking to main over `channel`. */
export function runStageProcess(
  channel: ControlChannel<StageToMain, MainToStage>,
  createStage: CreateStage,
  opts: StageProcessOptions = {},
): void {
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
    void boot(msg, channel, post, createStage, opts);
  });
}

async function boot(
  args: StageBootArgs,
  channel: ControlChannel<StageToMain, MainToStage>,
  post: (msg: StageToMain) => void,
  createStage: CreateStage,
  opts: StageProcessOptions,
): Promise<void> {
  const spec = args.graph.stages[args.stageIndex];
  const self = args.instance ?? `${spec.stageId}#${args.replica}`;
  const log = logger.child({ stage: self });
  // First: the model's threads, started below, inherit it. engine.nice puts this stage below the others.
  lowerPriority(args.graph.stageNice + (spec.engine.nice ?? 0), log);
  pinThisProcess(cpusFor(args.graph, spec), log); // the same: its cores, or the ones no stage reserved
  const parts: BootParts = { connector: null, tracing: null };
  let stage: ReadyStage;
  try {
    if (spec.engine.sched === 'idle') enterIdleClass(self);
    stage = await bootStage(args, { self, channel, post, log, parts, createStage, opts });
  } catch (err) {
    log.error({ err }, 'stage failed to boot');
    const wrapped =
      err instanceof ChorusError
        ? err
        : new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${self} failed to boot: ${String(err)}`, { cause: err });
    post({ type: 'boot_failed', error: serializeError(wrapped) });
    await parts.connector?.close().catch(() => undefined);
    await parts.tracing?.shutdown();
    process.exitCode = 1;
    channel.close();
    return;
  }
  try {
    await serve(stage, post, log);
    channel.close();
  } catch (err) {
    // After READY a failure is a crash, not a failed boot: main must see the process die (it fails this instance's
    // requests, migrates them and restarts the stage), never a boot_failed that says the model could not load.
    log.error({ err }, 'stage failed while serving');
    await parts.connector?.close().catch(() => undefined);
    process.exitCode = 1;
    channel.close();
  }
}

/** What a boot has opened so far (closed again when it fails). */
interface BootParts {
  connector: Connector | null;
  tracing: Tracing | null;
}

interface BootContext {
  readonly self: string;
  readonly channel: ControlChannel<StageToMain, MainToStage>;
  readonly post: (msg: StageToMain) => void;
  readonly log: Logger;
  readonly parts: BootParts;
  readonly createStage: CreateStage;
  readonly opts: StageProcessOptions;
}

interface ReadyStage {
  readonly loop: StageLoop;
  readonly adapter: ChunkTransferAdapter;
  readonly connector: Connector;
  readonly ctx: StageContext;
  readonly tracing: Tracing | null;
  readonly close: () => Promise<void>;
  readonly stats: () => Extract<StageToMain, { type: 'stats' }>;
}

/** Connects, loads the model, builds the core and loop, and posts READY. */
async function bootStage(
  args: StageBootArgs,
  { self, channel, post, log, parts, createStage, opts }: BootContext,
): Promise<ReadyStage> {
  const spec = args.graph.stages[args.stageIndex];
  const started = performance.now();
  let loop: StageLoop | null = null;
  const tracing = startTracing(self, process.env, log); // from this process's OTEL_* (a remote host sets its own)
  parts.tracing = tracing;
  const connector = await createConnector(args.graph, self, args.edges);
  parts.connector = connector;
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
    stepTrace: StepTrace.fromEnv(self),
    // A config that holds the idle cores polling for speed keeps the entry stage's weights warm while the answers it
    // wrote are still being spoken downstream (IdleWarmth.ts): both trade an idle core's power for a sooner packet.
    keepWarmMs: args.graph.cpuWakeupLatencyUs === null ? 0 : KEEP_WARM_WINDOW_MS,
    spans: tracing ? new StageSpans(tracing, spec.stageId, self, edgeTransports(args.graph, spec)) : null,
  };
  const { core, facts, modelFiles, close } = await createStage(ctx, args.graph);
  const spans = ctx.spans;
  // On a machine of its own (`chorus stage`) it holds that machine's idle cores to the config's wake-up latency while
  // it has requests, as main does on main's.
  const wakeups = opts.ownMachine
    ? CpuWakeupLatency.asked(args.graph.cpuWakeupLatencyUs, log.child({ component: 'cpu-latency' }))
    : null;
  // Lightly loaded, this stage's waits publish its thread, so the producer that wakes it moves it off the producer's
  // core (native/src/ring.cc): a kernel that packs wake-ups put the Talker, woken by the first prompt rows, on the
  // Thinker's core while the other idled (docs/operations.md, "Woken stages moved off their waker's core"). Busier,
  // both cores have work and a move only trades which waits.
  let published: boolean | null = null;
  const onLoad = (requests: number) => {
    const light = requests <= LIGHT_LOAD_MAX_LIVE;
    if (light !== published) addon.publishReaderThread((published = light)); // on a change only: called every step
    if (requests > 0) wakeups?.busy();
    else wakeups?.idle();
  };
  loop = new StageLoop(core, adapter, post, log, spans ? () => spans.idle(core.size > 0) : undefined, onLoad);
  const running = loop;
  channel.onMessage((msg) => running.deliver(msg));
  const loadMs = Math.round(performance.now() - started);
  const settings = { stageId: spec.stageId, replica: args.replica, pid: process.pid, threads: spec.engine.threads };
  const buildMs = Math.round(modelBuildMsHere());
  post({ type: 'ready', settings: { ...settings, modelFiles, loadMs, buildMs, facts } });
  log.info({ loadMs, facts }, 'stage ready');
  const closeAll = async () => {
    wakeups?.close();
    await close();
  };
  return {
    loop,
    adapter,
    connector,
    ctx,
    tracing,
    close: closeAll,
    stats: () => ({ type: 'stats', stats: core.stats() }),
  };
}

/** Runs the step loop until drained, then closes everything and says so. */
async function serve(stage: ReadyStage, post: (msg: StageToMain) => void, log: Logger): Promise<void> {
  const stats = setInterval(() => post(stage.stats()), STATS_INTERVAL_MS).unref();
  try {
    await stage.loop.run();
  } finally {
    clearInterval(stats);
  }
  await stage.adapter.close();
  await stage.connector.close();
  await stage.close();
  stage.ctx.stepTrace?.close();
  stage.ctx.spans?.flush(); // the spans still only noted
  await stage.tracing?.shutdown(); // exports what is queued; a collector that cannot be reached only costs a warning
  post({ type: 'drained' });
  log.info('stage drained');
}
