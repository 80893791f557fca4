/**
 * A Connector within one process (tests, and single-process embedding). Same contract as the shm
 * connector, including bounded capacity: a put waits while the edge holds more than `capacityBytes`
 * of frames nobody has asked for yet (unless a get() is waiting on that edge), and rejects with
 * CHORUS_ERR_BACKPRESSURE_TIMEOUT at its deadline. Frames are handed over by reference, not copied:
 * the producer must not modify a frame after put().
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { Connector, FrameParts } from '../Connector.ts';
import { joinParts } from '../codec.ts';
import { KeyedMailbox, raceDeadline } from '../KeyedMailbox.ts';

/** Unclaimed bytes an inproc edge may hold before put() waits, unless the connector is given its own. */
export const DEFAULT_INPROC_CAPACITY_BYTES = 64 * 1024 * 1024;

export interface InprocConnectorOptions {
  /** Unclaimed bytes an edge may hold before put() waits. Default DEFAULT_INPROC_CAPACITY_BYTES. */
  capacityBytes?: number;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly mailbox: KeyedMailbox;
  // Puts that had to wait, chained so frames arrive in call order.
  tail: Promise<unknown>;
  waitingPuts: number;
}

export class InprocConnector implements Connector {
  readonly kind = 'inproc' as const;
  readonly capacityBytes: number;
  readonly #edges = new Map<string, Edge>();
  #closed = false;

  constructor(options: InprocConnectorOptions = {}) {
    this.capacityBytes = options.capacityBytes ?? DEFAULT_INPROC_CAPACITY_BYTES;
  }

  put(from: string, to: string, key: string, parts: FrameParts, deadline: number): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const frame = parts instanceof Uint8Array ? parts : joinParts(parts);
    if (frame.byteLength > this.capacityBytes) {
      return Promise.reject(
        new ChorusError(
          ErrorCodes.FRAME_TOO_LARGE,
          `frame of ${frame.byteLength} bytes exceeds edge ${from}->${to} capacity ${this.capacityBytes}: raise ` +
            `capacityBytes or split the frame`,
        ),
      );
    }
    const edge = this.#edge(from, to);
    const limit = this.capacityBytes;
    const deliver = (): void => {
      if (this.#closed) throw this.#closedError();
      edge.mailbox.deliver(key, frame);
    };
    if (edge.waitingPuts === 0 && edge.mailbox.admits(frame.byteLength, limit)) {
      try {
        deliver();
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    edge.waitingPuts++;
    const previous = edge.tail;
    const mine = (async () => {
      const timeout = () =>
        new ChorusError(
          ErrorCodes.BACKPRESSURE_TIMEOUT,
          `put of ${key} on edge ${from}->${to} waited past its deadline behind earlier puts`,
        );
      await raceDeadline(previous, deadline, timeout);
      await edge.mailbox.waitForRoom(frame.byteLength, limit, deadline);
      deliver();
    })().finally(() => edge.waitingPuts--);
    // The next put waits for both, so a put that timed out never lets a later one overtake an earlier one.
    edge.tail = Promise.allSettled([previous, mine]);
    return mine;
  }

  get(from: string, to: string, key: string, deadline: number): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return this.#edge(from, to).mailbox.get(key, deadline);
  }

  /** `onEdge`, when given, limits the cleanup to the edges it accepts (a shared hub: one instance's inbound edges). */
  cleanup(requestId: string, onEdge?: (from: string, to: string) => boolean): void {
    for (const edge of this.#edges.values()) if (!onEdge || onEdge(edge.from, edge.to)) edge.mailbox.cleanup(requestId);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const edge of this.#edges.values()) edge.mailbox.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #edge(from: string, to: string): Edge {
    const label = `${from}->${to}`;
    let edge = this.#edges.get(label);
    if (edge === undefined) {
      edge = { from, to, mailbox: new KeyedMailbox(label), tail: Promise.resolve(), waitingPuts: 0 };
      this.#edges.set(label, edge);
    }
    return edge;
  }

  #closedError(): ChorusError {
    return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, 'inproc connector is closed');
  }
}
