/**
 * One Connector over several: a process whose edges use connectors of different kinds (shm to a stage on this
 * machine, another kind to a stage elsewhere) sends each put and get to the connector of that edge; cleanup and
 * close reach all of them.
 */
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import type { Connector, FrameParts } from './Connector.ts';
import { endMatches, type EdgeBinding } from './edges.ts';

export class RoutingConnector implements Connector {
  readonly kind: Connector['kind'];
  readonly #routes: readonly { edge: EdgeBinding; connector: Connector }[];
  // Resolved routes by "from->to" (edges may name "stage#*": resolved once per concrete pair).
  readonly #byEdge = new Map<string, Connector>();
  readonly #all: readonly Connector[];

  /** `routes`: each edge of this process with the connector carrying it. */
  constructor(routes: readonly { edge: EdgeBinding; connector: Connector }[]) {
    this.#routes = routes;
    this.#all = [...new Set(routes.map((r) => r.connector))];
    this.kind = this.#all[0]?.kind ?? 'shm';
  }

  put(from: string, to: string, key: string, frame: FrameParts, deadline: number) {
    return this.#route(from, to).put(from, to, key, frame, deadline);
  }

  get(from: string, to: string, key: string, deadline: number) {
    return this.#route(from, to).get(from, to, key, deadline);
  }

  putsInOrder(from: string, to: string): boolean {
    return this.#route(from, to).putsInOrder?.(from, to) ?? false;
  }

  cleanup(requestId: string): void {
    for (const c of this.#all) c.cleanup(requestId);
  }

  dropSent(requestId: string): void {
    for (const c of this.#all) c.dropSent?.(requestId);
  }

  readNow(): void {
    for (const c of this.#all) c.readNow?.();
  }

  async close(): Promise<void> {
    await Promise.all(this.#all.map((c) => c.close()));
  }

  #route(from: string, to: string): Connector {
    const label = `${from}->${to}`;
    let c = this.#byEdge.get(label);
    if (!c) {
      // Exact edges first: a stage's own replicas may ride shm while instances that joined ride redis.
      const exact = this.#routes.find((r) => r.edge.from === from && r.edge.to === to);
      c = (exact ?? this.#routes.find((r) => endMatches(r.edge.from, from) && endMatches(r.edge.to, to)))?.connector;
      if (c) this.#byEdge.set(label, c);
    }
    if (!c)
      throw new ChorusError(ErrorCodes.CONFIG_INVALID, `no connector carries edge ${from}->${to} in this process`);
    return c;
  }
}
