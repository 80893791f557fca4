/**
 * Maps the graph's connector specs onto implementations (transport/kinds.ts). Main provisions every edge
 * before the stages start, connector by connector (shm: creates the rings it owns and unlinks them on release);
 * each process then opens one Connector as its own instance, over the edges it reads or writes. When those edges
 * use one connector it gets that connector's Connector; when they use several (say shm to a stage on this machine
 * and another kind to one elsewhere), it gets a RoutingConnector (transport/RoutingConnector.ts) that sends each
 * edge's puts and gets to the connector of that edge and fans cleanup and close out to all of them.
 */
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import type { ConnectorSpec, StageGraph } from '../src/common/graph.ts';
import type { Connector } from './Connector.ts';
import { edgeTouches, type EdgeBinding } from './edges.ts';
import { allConnectorKinds, kindEntry, type ConnectorKindEntry, type ProvisionedEdges } from './kinds.ts';
import { RoutingConnector } from './RoutingConnector.ts';
import { sweepStaleSegments } from './shm/segments.ts';

export type { ProvisionedEdges };

function specOf(graph: StageGraph, edge: EdgeBinding): { spec: ConnectorSpec; entry: ConnectorKindEntry } {
  const spec = kindEntry(graph.connectors, edge.connector);
  const entry = spec ? kindEntry(allConnectorKinds, spec.kind) : undefined;
  if (!spec || !entry)
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      spec
        ? `edge ${edge.from}->${edge.to}: connector ${spec.name} is of kind ${spec.kind}, which is not built ` +
            `(built: ${Object.keys(allConnectorKinds).join(', ')})`
        : `edge ${edge.from}->${edge.to} names connector ${edge.connector}, which the graph does not define`,
    );
  return { spec, entry };
}

/** Edges grouped by the connector (name) that carries them. */
function byConnector(graph: StageGraph, edges: readonly EdgeBinding[]) {
  const groups = new Map<string, { spec: ConnectorSpec; entry: ConnectorKindEntry; edges: EdgeBinding[] }>();
  for (const edge of edges) {
    const { spec, entry } = specOf(graph, edge);
    const group = groups.get(spec.name) ?? { spec, entry, edges: [] };
    group.edges.push(edge);
    groups.set(spec.name, group);
  }
  return [...groups.values()];
}

/**
 * Removes what a Chorus process that died without cleaning up left behind (shm segments whose owner pid is gone),
 * so that the provider of the edges does not need to know which transports keep anything; returns their names.
 */
export function sweepStaleTransports(): string[] {
  return sweepStaleSegments();
}

export async function provisionEdges(graph: StageGraph, edges: readonly EdgeBinding[]): Promise<ProvisionedEdges> {
  const done: ProvisionedEdges[] = [];
  const releaseAll = () => {
    for (const p of done) p.release();
  };
  try {
    for (const group of byConnector(graph, edges)) done.push(group.entry.provision(group.edges, group.spec.options));
  } catch (err) {
    releaseAll();
    throw err;
  }
  return { edges: done.flatMap((p) => p.edges), release: releaseAll };
}

export async function createConnector(
  graph: StageGraph,
  self: string,
  edges: readonly EdgeBinding[],
): Promise<Connector> {
  const mine = edges.filter((e) => edgeTouches(e, self));
  const groups = byConnector(graph, mine);
  const opened: { connector: Connector; edges: readonly EdgeBinding[] }[] = [];
  try {
    for (const g of groups)
      opened.push({ connector: await g.entry.open(self, g.edges, g.spec.options), edges: g.edges });
  } catch (err) {
    await Promise.all(opened.map((o) => o.connector.close()));
    // An unreachable transport is not a config mistake: its own error says what to check.
    if (err instanceof ChorusError && err.code === ErrorCodes.TRANSPORT_UNAVAILABLE) throw err;
    throw new ChorusError(ErrorCodes.CONFIG_INVALID, `${self} cannot open its edges: ${String(err)}`, { cause: err });
  }
  if (opened.length === 1) return opened[0].connector;
  return new RoutingConnector(opened.flatMap((o) => o.edges.map((edge) => ({ edge, connector: o.connector }))));
}
