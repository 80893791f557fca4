/**
 * The control plane for stage instances on other machines, as the engine and `chorus stage` use it: main opens its
 * side (membership: heartbeats, leases, boot, join, loss; Membership.ts), an instance joins a deployment
 * (InstanceChannel.ts). Neither caller knows the engine under it: it is the one of the connector the joinable stages
 * cross hosts on (engines.ts), Redis today. The engine reaches src/control through this file and the IPC channel
 * only (test/helpers/importGraph.ts).
 */
import type { StageGraph, StageSpec } from '../common/graph.ts';
import { edgesTouching } from '../common/edgeConnectors.ts';
import type { Logger } from '../common/log.ts';
import { endMatches } from '../../transport/registry.ts';
import type { EdgeBinding, MainToStage } from '../worker/messages.ts';
import type { ConnectorOptions, ControlEngine } from './ControlLink.ts';
import { controlEngineOf } from './engines.ts';
import { InstanceChannel } from './InstanceChannel.ts';
import { Membership } from './Membership.ts';
import type { RemoteStageHandle } from './RemoteStageHandle.ts';

export type { InstanceChannel, RemoteStageHandle };

/** What main uses of the plane. */
export interface ControlPlane {
  /** An instance from another machine answered its boot with READY: it takes requests like a local replica. */
  on(event: 'joined', listener: (handle: RemoteStageHandle) => void): unknown;
  /** Deletes the frames pushed into a lost instance for these runs (best effort: they expire anyway). */
  dropInbox(instance: string, runIds: readonly string[]): void;
  /** Leaves the plane (main's deployment record goes with it). */
  close(): Promise<void>;
}

/** Where a graph's instances join: the connector kind whose engine carries the plane, and its options. */
export interface ControlPlaneSite {
  readonly kind: string;
  readonly engine: ControlEngine;
  readonly options: ConnectorOptions;
}

/** The plane of the first connector with an engine that a joinable stage uses; null when no stage is joinable. */
export function controlPlaneOf(graph: StageGraph): ControlPlaneSite | null {
  for (const stage of graph.stages) {
    if (!stage.joinable) continue;
    for (const e of edgesTouching(graph, stage)) {
      const spec = graph.connectors[e.connector];
      const engine = spec && controlEngineOf(spec.kind);
      if (engine) return { kind: spec.kind, engine, options: spec.options };
    }
  }
  return null;
}

/** Main's side, for a graph with stages instances may join (null when none is joinable). */
export async function openControlPlane(
  graph: StageGraph,
  edgesOf: (instance: string) => EdgeBinding[],
  log: Logger,
): Promise<ControlPlane | null> {
  const site = controlPlaneOf(graph);
  if (!site) return null;
  const link = await site.engine.connect(site.options, 'chorus:main');
  // Where frames pushed into an instance wait: the connectors of the plane's kind on the edges into it.
  const inboxesOf = (instance: string) =>
    edgesOf(instance)
      .filter((e) => endMatches(e.to, instance) && graph.connectors[e.connector]?.kind === site.kind)
      .map((e) => graph.connectors[e.connector].options);
  const membership = new Membership(link, graph, graph.configHash ?? '', edgesOf, inboxesOf, log);
  try {
    await membership.start();
  } catch (err) {
    await link.close();
    throw link.unavailable(err);
  }
  return membership;
}

export interface JoinOptions {
  readonly graph: StageGraph;
  readonly spec: StageSpec;
  readonly instance: string;
  /** Main's boot, made this host's (same config, this machine's model paths). */
  readonly localBoot: (msg: Extract<MainToStage, { type: 'boot' }>) => MainToStage;
  /** Main refused this instance, or another process took its name: it must stop (close `channel`). */
  readonly onRefused: (reason: string, channel: InstanceChannel) => void;
}

/**
 * An instance's side: connects to the plane of `site`, checks the deployment, takes the name and starts beating.
 * Rejects (with nothing left open) when any of that fails.
 */
export async function joinDeployment(site: ControlPlaneSite, join: JoinOptions): Promise<InstanceChannel> {
  const link = await site.engine.connect(site.options, `chorus:${join.instance}`);
  const channel = new InstanceChannel(
    link,
    { kind: site.kind, options: site.options },
    join.instance,
    join.spec.stageId,
    join.graph.configHash ?? '',
    join.localBoot,
    (reason) => join.onRefused(reason, channel),
  );
  try {
    await channel.start();
  } catch (err) {
    await link.close();
    throw err;
  }
  return channel;
}
