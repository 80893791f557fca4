/**
 * The inproc connector kind of transport/registry.ts: stage instances that all live in one process (tests, a
 * single-process embedding) share one InprocConnector, the hub that provision() creates; each instance opens a
 * view of it. A view behaves like its own process's connector would: cleanup drops only what was sent to this
 * instance, and close rejects only this instance's pending puts and gets (the hub lives until release()).
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { Connector, FrameParts } from '../Connector.ts';
import { InprocConnector } from './InprocConnector.ts';

const hubs = new Map<string, InprocConnector>();
let nextHub = 0;

/** A new hub, found again by the returned id (edge bindings carry it), until released. */
export function createInprocHub(capacityBytes: number): { id: string; release(): void } {
  const id = `inproc-${process.pid}-${nextHub++}`;
  const hub = new InprocConnector({ capacityBytes });
  hubs.set(id, hub);
  return {
    id,
    release() {
      if (hubs.get(id) !== hub) return;
      hubs.delete(id);
      void hub.close();
    },
  };
}

export function openInprocHub(id: string, self: string): Connector {
  const hub = hubs.get(id);
  if (!hub)
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `inproc hub ${id} is not in this process (it was released, or made by another process): inproc links ` +
        `stage instances within one process only`,
    );
  return new InprocView(hub, self);
}

class InprocView implements Connector {
  readonly kind = 'inproc' as const;
  readonly #hub: InprocConnector;
  readonly #self: string;
  readonly #pending = new Set<(err: Error) => void>();
  #closed = false;

  constructor(hub: InprocConnector, self: string) {
    this.#hub = hub;
    this.#self = self;
  }

  put(from: string, to: string, key: string, frame: FrameParts, deadline: number) {
    return this.#track(() => this.#hub.put(from, to, key, frame, deadline));
  }

  get(from: string, to: string, key: string, deadline: number) {
    return this.#track(() => this.#hub.get(from, to, key, deadline));
  }

  cleanup(requestId: string): void {
    this.#hub.cleanup(requestId, (_from, to) => to === this.#self);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const err = this.#closedError();
    for (const reject of this.#pending) reject(err);
    this.#pending.clear();
  }

  #track<T>(op: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return new Promise<T>((resolve, reject) => {
      this.#pending.add(reject);
      op()
        .then(resolve, reject)
        .finally(() => this.#pending.delete(reject));
    });
  }

  #closedError(): ChorusError {
    return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, `inproc connector of ${this.#self} is closed`);
  }
}
