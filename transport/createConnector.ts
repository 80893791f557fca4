/**
 * Maps the graph's connector specs onto implementations. The main process provisions every edge (creates the shm
 * rings it owns, unlinks them on release); each process then opens one Connector as its own instance.
 * A process with edges on several connector kinds gets a router that dispatches by edge.
 */
import type { StageGraph } from '../src/config/types.ts';
import { ChorusError, ErrorCodes } from '../src/errors.ts';
import type { EdgeBinding } from '../src/worker/messages.ts';
import type { Connector } from './Connector.ts';
import { ShmConnector } from './shm/ShmConnector.ts';

const DEFAULT_RING_BYTES = 16 << 20; // 16 MiB per edge: ~80 Code2Wav chunks of 25 frames in flight

export interface ProvisionedEdges {
  readonly edges: readonly EdgeBinding[];
  /** Unlinks every shared-memory segment provisioned here. Idempotent. */
  release(): void;
}

function kindOf(graph: StageGraph, edge: EdgeBinding) {
  const spec = graph.connectors[edge.connector];
  if (!spec) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `edge ${edge.from}->${edge.to} names unknown connector ${edge.connector}`);
  return spec;
}

export async function provisionEdges(graph: StageGraph, edges: readonly EdgeBinding[]): Promise<ProvisionedEdges> {
  const out: EdgeBinding[] = [];
  const rings: { from: string; to: string; ringName: string }[] = [];
  try {
    for (const edge of edges) {
      const spec = kindOf(graph, edge);
      if (spec.kind !== 'shm') {
        throw new ChorusError(ErrorCodes.CONFIG_INVALID, `connector ${edge.connector} (${spec.kind}) cannot link stage processes on one machine yet; use kind: shm`);
      }
      const capacity = Number(spec.options.ring_bytes ?? spec.options.ringBytes ?? DEFAULT_RING_BYTES);
      const [ring] = ShmConnector.createRings([edge], capacity);
      rings.push(ring);
      out.push({ ...edge, ringName: ring.ringName });
    }
  } catch (err) {
    ShmConnector.unlinkRings(rings);
    throw err;
  }
  let released = false;
  return {
    edges: out,
    release() {
      if (released) return;
      released = true;
      ShmConnector.unlinkRings(rings);
    },
  };
}

export async function createConnector(graph: StageGraph, self: string, edges: readonly EdgeBinding[]): Promise<Connector> {
  const mine = edges.filter((e) => e.from === self || e.to === self);
  for (const e of mine) {
    if (kindOf(graph, e).kind !== 'shm' || !e.ringName) {
      throw new ChorusError(ErrorCodes.CONFIG_INVALID, `edge ${e.from}->${e.to} has no shared-memory ring (connector ${e.connector})`);
    }
  }
  return ShmConnector.open({ me: self, edges: mine.map((e) => ({ from: e.from, to: e.to, ringName: e.ringName! })) });
}
