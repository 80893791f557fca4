/**
 * Connector over shared-memory rings, one SPSC ring per edge (from-instance -> to-instance).
 *
 * Ownership: the main process creates every ring (ShmConnector.createRings), passes the edge table to
 * the stage processes, and unlinks the rings when the engine closes (unlinkRings). A stage process owns no
 * segment, so a crashed stage leaves nothing to unlink: its restarted process attaches the same rings. Every
 * process, main included, then opens a connector as one instance ("talker#0"): it writes to the rings
 * where from == me and runs one event-driven receive loop per ring where to == me, feeding a KeyedMailbox.
 *
 * Wire format of one ring frame: [u16 keyLength LE][key utf8][frame bytes], written as one multi-part
 * frame so the payload is copied once, straight into shared memory.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { logger } from '../../src/common/log.ts';
import type { Connector, FrameParts } from '../Connector.ts';
import { KeyedMailbox } from '../KeyedMailbox.ts';
import { ShmRing } from './ShmRing.ts';

export interface ShmEdge {
  readonly from: string;
  readonly to: string;
  readonly ringName: string;
}

export interface ShmConnectorOptions {
  readonly edges: readonly ShmEdge[];
  /** The instance this process is, e.g. "talker#0". */
  readonly me: string;
  /**
   * Unclaimed bytes an inbound edge keeps before its receive loop stops draining the ring, so that a
   * consumer that does not call get() pushes back on the producer through the full ring. A waiting
   * get() lifts the limit (its frame may be behind). Default: the ring's capacity.
   */
  readonly maxKeptBytes?: number;
}

interface Inbound {
  readonly ring: ShmRing;
  readonly mailbox: KeyedMailbox;
  readonly label: string;
  readonly maxKeptBytes: number;
}

// A receive loop re-arms its native wait this often when idle; the cost is one wake-up per slice.
const READ_SLICE_MS = 5_000;
const MAX_KEY_BYTES = 0xffff;

export class ShmConnector implements Connector {
  readonly kind = 'shm' as const;
  readonly me: string;
  readonly #outbound = new Map<string, ShmRing>(); // by `to`
  readonly #inbound = new Map<string, Inbound>(); // by `from`
  readonly #loops: Promise<void>[] = [];
  #closing: Promise<void> | null = null;
  readonly #log;

  private constructor(options: ShmConnectorOptions) {
    this.me = options.me;
    this.#log = logger.child({ component: 'ShmConnector', me: options.me });
    try {
      for (const edge of options.edges) {
        if (edge.from === this.me) this.#outbound.set(edge.to, ShmRing.attach(edge.ringName));
        if (edge.to !== this.me) continue;
        const ring = ShmRing.attach(edge.ringName);
        const label = `${edge.from}->${edge.to}`;
        const maxKeptBytes = options.maxKeptBytes ?? ring.capacityBytes;
        this.#inbound.set(edge.from, { ring, mailbox: new KeyedMailbox(label), label, maxKeptBytes });
      }
    } catch (err) {
      this.#closeRings();
      throw err;
    }
    for (const inbound of this.#inbound.values()) this.#loops.push(this.#receive(inbound));
  }

  /** Attaches the rings of the edges that touch `me` and starts receiving. */
  static open(options: ShmConnectorOptions): ShmConnector {
    return new ShmConnector(options);
  }

  /** Owner side: creates one ring per edge. On failure, unlinks the rings already made. */
  static createRings(edges: readonly { from: string; to: string }[], capacityBytes: number): ShmEdge[] {
    const made: ShmEdge[] = [];
    try {
      for (const { from, to } of edges) {
        // The segment persists after this mapping closes: it lives until unlinkRings().
        const ring = ShmRing.create({ capacityBytes });
        ring.close();
        made.push({ from, to, ringName: ring.name });
      }
    } catch (err) {
      ShmConnector.unlinkRings(made);
      throw err;
    }
    return made;
  }

  /** Owner side: unlinks every ring of the table (those already gone are skipped). */
  static unlinkRings(edges: readonly ShmEdge[]): void {
    for (const edge of edges) ShmRing.unlinkByName(edge.ringName);
  }

  put(from: string, to: string, key: string, frame: FrameParts, deadline: number): Promise<void> {
    const ring = from === this.me ? this.#outbound.get(to) : undefined;
    if (ring === undefined) return Promise.reject(this.#noEdge(from, to));
    if (this.#closing) return Promise.reject(closedError(`${from}->${to}`));
    const keyBytes = Buffer.byteLength(key, 'utf8');
    if (keyBytes > MAX_KEY_BYTES) {
      return Promise.reject(
        new ChorusError(ErrorCodes.FRAME_INVALID, `key of ${keyBytes} bytes exceeds ${MAX_KEY_BYTES}`),
      );
    }
    // The header is padded to 8 bytes so the frame lands 8-byte aligned and decodes as views, without a copy.
    const header = Buffer.alloc(keyHeaderBytes(keyBytes));
    header.writeUInt16LE(keyBytes, 0);
    header.write(key, 2, 'utf8');
    return ring.write([header, ...(frame instanceof Uint8Array ? [frame] : frame)], deadline);
  }

  /**
   * One ring per edge, and ShmRing.write puts frames in in call order (a write that has to wait for room queues the
   * ones after it): the adapter may hand each frame over as soon as it is made, not after the previous put resolved.
   */
  putsInOrder(): boolean {
    return true;
  }

  get(from: string, to: string, key: string, deadline: number): Promise<Uint8Array> {
    const inbound = to === this.me ? this.#inbound.get(from) : undefined;
    if (inbound === undefined) return Promise.reject(this.#noEdge(from, to));
    return inbound.mailbox.get(key, deadline);
  }

  cleanup(requestId: string): void {
    for (const inbound of this.#inbound.values()) inbound.mailbox.cleanup(requestId);
  }

  /**
   * Ends the receive loops' waits on rings that hold a frame now, as their doorbells' events would at the event
   * loop's next poll: the loops read and deliver as the promise turns after this call run. A loop held back by the
   * kept-bytes limit is not waiting on its ring, so it stays held.
   */
  readNow(): void {
    if (this.#closing) return;
    for (const inbound of this.#inbound.values()) inbound.ring.readyNow();
  }

  /** Idempotent. Rejects pending gets and puts, stops the receive loops, unmaps (does not unlink). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const inbound of this.#inbound.values()) inbound.mailbox.close();
      this.#closeRings();
      await Promise.all(this.#loops);
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #receive(inbound: Inbound): Promise<void> {
    const { ring, mailbox } = inbound;
    try {
      for (;;) {
        // Stop draining while too much is unclaimed: the ring then fills and the producer waits.
        await mailbox.waitForRoom(1, inbound.maxKeptBytes, Number.POSITIVE_INFINITY);
        const frame = await ring.read(Date.now() + READ_SLICE_MS);
        if (frame !== null) this.#deliver(inbound, frame);
      }
    } catch (err) {
      if (this.#closing) return; // close() rejected the wait: the normal way out
      const reason = new ChorusError(ErrorCodes.SHM, `receive loop of edge ${inbound.label} failed: ${String(err)}`, {
        cause: err,
      });
      this.#log.error({ err: reason, edge: inbound.label }, 'shm receive loop stopped');
      mailbox.close(reason);
    }
  }

  #deliver(inbound: Inbound, bytes: Buffer): void {
    const keyBytes = bytes.length >= 2 ? bytes.readUInt16LE(0) : -1;
    if (keyBytes < 0 || keyHeaderBytes(keyBytes) > bytes.length) {
      this.#log.error({ edge: inbound.label, bytes: bytes.length }, 'dropped a malformed ring frame (bad key header)');
      return;
    }
    const key = bytes.toString('utf8', 2, 2 + keyBytes);
    // A plain Uint8Array view (no copy), the same type the other connectors hand out.
    const offset = keyHeaderBytes(keyBytes);
    const frame = new Uint8Array(bytes.buffer, bytes.byteOffset + offset, bytes.length - offset);
    try {
      inbound.mailbox.deliver(key, frame);
    } catch (err) {
      this.#log.error({ err, edge: inbound.label, key }, 'dropped a frame');
    }
  }

  #closeRings(): void {
    for (const ring of this.#outbound.values()) ring.close();
    for (const { ring } of this.#inbound.values()) ring.close();
  }

  #noEdge(from: string, to: string): ChorusError {
    return new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `shm connector of ${this.me} has no edge ${from}->${to}: it can put only from ${this.me} and get only into ` +
        `${this.me} ` +
        'on edges of the table it was opened with',
    );
  }
}

/** [u16 key length][key utf8][zero pad to a multiple of 8]. */
function keyHeaderBytes(keyBytes: number): number {
  return (2 + keyBytes + 7) & ~7;
}

function closedError(label: string): ChorusError {
  return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, `edge ${label} is closed`);
}
