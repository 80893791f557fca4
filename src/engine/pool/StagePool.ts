/**
 * The stage instances of one pipeline, local and remote, and their whole life: boot (one supervised process per
 * replica), READY, death and restart (InstanceEvents.ts), hang (HangWatch.ts), a remote instance joining through the
 * control plane (src/control/ControlPlane.ts) and its loss, shutdown. It is the one owner of the instance records; what
 * happens to them reaches the request side as events (StagePoolEvents.ts), so the pool knows nothing of requests but
 * their ids.
 */
import { EventEmitter } from 'node:events';
import type { StageHealth } from '../../common/engine.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { Logger } from '../../common/log.ts';
import type { AudioOutputFacts, ModelFacts } from '../../common/modelFacts.ts';
import type { EdgeBinding, MainToStage } from '../../worker/messages.ts';
import { edgeTouches } from '../../../transport/registry.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import { openControlPlane, type ControlPlane, type RemoteStageHandle } from '../../control/ControlPlane.ts';
import { instanceId } from '../planEdges.ts';
import type { StageWorkerHandle, StartStageWorker } from '../stageWorkers.ts';
import type { StageSendOptions } from '../../worker/StageWorker.ts';
import { HangWatch } from './HangWatch.ts';
import { healthOf } from './healthOf.ts';
import { InstanceEvents } from './InstanceEvents.ts';
import { LostInboxes } from './LostInboxes.ts';
import { newInstance, type InstanceView, type StageInstance } from './StageInstance.ts';
import type { StagePoolEvents } from './StagePoolEvents.ts';

export interface StagePoolOptions {
  readonly graph: StageGraph;
  readonly startWorker: StartStageWorker;
  /** Restart a stage that dies after READY. */
  readonly restartOnDeath: boolean;
  readonly log: Logger;
  /** The engine's id, tagged on its instances' stats, death and hang reports (Engine.id). */
  readonly engineId?: string;
}

export class StagePool extends EventEmitter<StagePoolEvents> {
  readonly #instances = new Map<string, StageInstance>();
  readonly #hangs: HangWatch;
  readonly #events: InstanceEvents;
  #hangTimer: NodeJS.Timeout | null = null;
  #remote: ControlPlane | null = null;
  #stopping = false;
  /** The edges main provisioned (set by start): each instance is booted with those it touches. */
  #edges: readonly EdgeBinding[] = [];
  /** Kept from the vocoder's first READY: a restarting vocoder must not make usage forget the audio format. */
  #audioFacts: Omit<AudioOutputFacts, 'framesPerToken'> | null = null;
  #framesPerToken: number | null = null;

  constructor(private readonly opts: StagePoolOptions) {
    super();
    this.#hangs = new HangWatch(opts.graph.stageHangMs);
    this.#events = new InstanceEvents({
      instances: this.#instances,
      hangs: this.#hangs,
      log: opts.log,
      ...(opts.engineId !== undefined ? { engine: opts.engineId } : {}),
      restarts: () => !this.#stopping && opts.restartOnDeath,
      boot: (inst) => this.#boot(inst),
      events: this,
      inboxes: new LostInboxes({
        heldAnywhere: (runId) => [...this.#instances.values()].some((inst) => inst.inFlight.has(runId)),
        drop: (instance, runIds) => this.#remote?.dropInbox(instance, runIds),
      }),
    });
  }

  /**
   * Boots every local replica and, beside them, opens the control plane remote instances join through: an instance
   * waiting on another host is booted as soon as main is on the plane, so it loads its model while the local ones
   * load theirs (a deployment is up after the slower of the two, not their sum).
   */
  async start(edges: readonly EdgeBinding[]): Promise<void> {
    const { graph } = this.opts;
    this.#edges = edges;
    graph.stages.forEach((spec, stageIndex) => {
      for (let replica = 0; replica < spec.replicas; replica++) {
        const instance = instanceId(spec.stageId, replica);
        this.#instances.set(instance, newInstance(graph, stageIndex, replica, instance));
      }
    });
    const boots = [...this.#instances.values()].map((inst) => this.#boot(inst));
    const plane = openControlPlane(graph, (instance) => this.#edgesOf(instance), this.opts.log).then((remote) => {
      // Kept at once: close() leaves the plane whatever start() ends with.
      this.#remote = remote;
      remote?.on('joined', (handle) => this.#join(handle));
    });
    // Wait for every boot and the plane to settle, not just the first failure: a stage still booting when another
    // fails must be stopped too, or it would outlive start-up as an orphan.
    const settled = await Promise.allSettled([...boots, plane]);
    const failed = settled.find((b): b is PromiseRejectedResult => b.status === 'rejected');
    if (failed) throw failed.reason;
    this.#hangTimer = setInterval(() => this.#events.checkHangs(), this.#hangs.intervalMs).unref();
  }

  /** Every instance by name, read-only; remote instances leave it when lost. */
  get instances(): ReadonlyMap<string, InstanceView> {
    return this.#instances;
  }

  /** Sends an instance a request's `add`: the request is in flight there until the instance reports it finished. */
  admit(instance: string, add: Extract<MainToStage, { type: 'add' }>): void {
    // Sent first: an add its worker refuses (arguments too large for the control channel) is not counted as load.
    this.#instances.get(instance)!.worker!.send(add);
    this.reserve(instance, add.requestId);
  }

  /**
   * Counts the request on the instance before its add is sent (an add sent after the first output,
   * stageAdds.ts addsAfterFirstOutput): it is the instance's load, and the instance's loss fails or moves it, from
   * admission on, as if the add had gone (the add then goes before any other message about it: tellStages.ts).
   */
  reserve(instance: string, requestId: string): void {
    this.#instances.get(instance)!.inFlight.add(requestId);
  }

  /** Sends a message to an instance if it is there and running (a message to one that is gone has no reader). */
  send(instance: string, msg: MainToStage, opts?: StageSendOptions): void {
    this.#instances.get(instance)?.worker?.send(msg, opts);
  }

  workerOf(instance: string): StageWorkerHandle | null {
    return this.#instances.get(instance)?.worker ?? null;
  }

  health(): StageHealth[] {
    return healthOf(this.opts.graph, [...this.#instances.values()]);
  }

  /** The pipeline's audio, from the first vocoder and Talker to report (replicas run one model); null without. */
  get audioOutput(): AudioOutputFacts | null {
    return this.#audioFacts && { ...this.#audioFacts, framesPerToken: this.#framesPerToken };
  }

  get framesPerToken(): number | null {
    return this.#framesPerToken;
  }

  /** Stops every local instance (draining up to timeoutMs); none restarts from here on. */
  async stop(timeoutMs: number): Promise<void> {
    this.#stopping = true;
    if (this.#hangTimer) clearInterval(this.#hangTimer);
    this.#events.stopHangChecks();
    await Promise.all(
      [...this.#instances.values()].map(async (inst) => {
        await inst.worker?.shutdown(timeoutMs);
        inst.status = 'stopped';
      }),
    );
  }

  /** Leaves the control plane (after stop: the requests' last aborts may still go out through it). */
  async close(): Promise<void> {
    await this.#remote?.close();
  }

  async #boot(inst: StageInstance): Promise<void> {
    inst.bootStartedAtMs = performance.now();
    const { graph, log } = this.opts;
    const args = { graph, stageIndex: inst.stageIndex, replica: inst.replica, edges: this.#edgesOf(inst.instance) };
    const worker = await this.opts.startWorker(args, log);
    if (this.#stopping) {
      // A restart that booted after stop() (which could not reach a process not yet READY): not the instance's, or
      // an engine closed in a living process (a reload's old one) would leave it running for good.
      inst.status = 'stopped';
      await worker.shutdown(0);
      return;
    }
    inst.worker = worker;
    inst.status = 'ready';
    // What a restart costs: the models this boot built (first use) are built for the next one.
    inst.lastBootMs = Math.max(0, performance.now() - inst.bootStartedAtMs - (worker.settings?.buildMs ?? 0));
    inst.lastHeardMs = Date.now();
    inst.cpuSamples = [];
    inst.cpuTicksWhenHeard = null;
    this.#ready(inst, worker.settings?.facts);
    worker.on('message', (msg) => this.#events.onMessage(inst, msg));
    worker.on('died', (info) => this.#events.onDied(inst, info));
  }

  /** An instance from another machine joined (READY): it takes requests like a local replica. */
  #join(handle: RemoteStageHandle): void {
    const { graph } = this.opts;
    const stageIndex = graph.stages.findIndex((s) => s.stageId === handle.heartbeat.stageId);
    const spec = graph.stages[stageIndex];
    const replica = spec.replicas + [...this.#instances.values()].filter((s) => s.spec === spec && s.remote).length;
    const inst = newInstance(graph, stageIndex, replica, handle.heartbeat.instance, handle);
    // In the pool before READY goes out: a request waiting for an instance of this stage (a migration, a pending
    // admission) looks for it in `instances` when woken, and a READY it cannot find there it would sleep through.
    this.#instances.set(inst.instance, inst);
    this.#ready(inst, handle.settings?.facts);
    handle.on('message', (msg) => this.#events.onMessage(inst, msg));
    handle.on('died', () => this.#events.onRemoteLost(inst, handle));
  }

  #ready(inst: StageInstance, facts: ModelFacts | undefined): void {
    const audio = facts && descriptorOf(inst.spec.kind).audioFacts?.(facts);
    if (audio?.framesPerToken != null) this.#framesPerToken ??= audio.framesPerToken;
    if (audio?.sampleRateHz !== undefined && audio.samplesPerFrame !== undefined)
      this.#audioFacts ??= { sampleRateHz: audio.sampleRateHz, samplesPerFrame: audio.samplesPerFrame };
    this.emit('ready', inst, facts);
  }

  #edgesOf(instance: string): EdgeBinding[] {
    return this.#edges.filter((e) => edgeTouches(e, instance));
  }
}
