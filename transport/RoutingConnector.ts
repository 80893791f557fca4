/**
 * One Connector over several: a process whose edges use connectors of different kinds (shm to a stage on this
 * machine, another kind to a stage elsewhere) sends each put and get to the connector of that edge; cleanup and
 * close reach all of them.
 */
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import type { Connector } from './Connector.ts';

export class RoutingConnector implements Connector {
  readonly kind: Connector['kind'];
  readonly #byEdge: ReadonlyMap<string, Connector>;
  readonly #all: readonly Connector[];

  /** `byEdge`: "from->to" -> the connector carrying that edge. */
  constructor(byEdge: ReadonlyMap<string, Connector>) {
    this.#byEdge = byEdge;
    this.#all = [...new Set(byEdge.values())];
    this.kind = this.#all[0]?.kind ?? 'shm';
  }

  put(from: string, to: string, key: string, frame: Uint8Array | readonly Uint8Array[], deadline: number) {
    return this.#route(from, to).put(from, to, key, frame, deadline);
  }

  get(from: string, to: string, key: string, deadline: number) {
    return this.#route(from, to).get(from, to, key, deadline);
  }

  cleanup(requestId: string): void {
    for (const c of this.#all) c.cleanup(requestId);
  }

  async close(): Promise<void> {
    await Promise.all(this.#all.map((c) => c.close()));
  }

  #route(from: string, to: string): Connector {
    const c = this.#byEdge.get(`${from}->${to}`);
    if (!c)
      throw new ChorusError(ErrorCodes.CONFIG_INVALID, `no connector carries edge ${from}->${to} in this process`);
    return c;
  }
}
