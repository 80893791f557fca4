/**
 * Owns the chunk protocol on top of a transport-only Connector (vLLM-Omni's OmniChunkTransferAdapter, reworked):
 * keys `{requestId}_{stageId}_{seq}`, in-order sends per edge, end of stream as a `final` flag on the last chunk
 * (sent even when it carries no data), a sequence check on receive, a deadline on every wait, cancellation.
 *
 * Receive is event-driven: each expected request has one pending get() for its next seq; an arrival is queued and
 * wakes the step loop, which drains the queue with processPendingChunks() before scheduling. There is no
 * restoreQueues(): the schedulers track readiness by counts (WAITING_FOR_CHUNK is derived), so nothing has to be
 * moved back after schedule().
 *
 * One protocol: async_chunk off changes only when processors emit (once, final), never this path.
 *
 * A deadline that passes while the producer is live (ExpectOptions.live.producer: a stage process that runs, stepping
 * or queued, holding the request) is renewed rather than failed: on a machine busy enough to starve a stage (its
 * processes run below the server's priority, stage_nice), a step that takes 1 s alone took a minute of wall time, and
 * the wall clock alone counted that as a lost chunk (issue 41: answers ended CHORUS_ERR_CHUNK_TIMEOUT, HTTP 500,
 * with every producer alive). A hung, dead or lost producer is not live: its wait fails at the deadline, when the
 * pool has not already failed the request (CHORUS_ERR_STAGE_HUNG / _DIED / _LOST). Renewals stop at the wait's
 * maxWaitMs (chunk_policy.max_chunk_wait_ms): a chunk lost while its producer goes on with other work still ends.
 */
import type { Connector } from '../Connector.ts';
import { chunkKey } from '../Connector.ts';
import { decodeFrame, encodeFrame, frameByteLength } from '../codec.ts';
import { decodeBody, encodeBody, type WirePayload } from '../payloadCodec.ts';
import type { ChunkBody } from '../../src/common/payloads.ts';
import { ChorusError, ErrorCodes, serializeError, type SerializedError } from '../../src/common/errors.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { monotonicMs } from '../../src/common/packetMarks.ts';

/** What every chunk says about itself, whatever its body. */
export interface ChunkMeta {
  readonly requestId: string;
  readonly from: string; // stage id of the producer
  readonly to: string; // stage id of the consumer, or "main"
  readonly seq: number;
  readonly final: boolean;
  /** Wall-clock ms when the producer saved the chunk (per-edge latency metrics). */
  readonly sentAtMs: number;
  /** On a final chunk: why the stream ended upstream (an error or cancellation reaches downstream in-band). */
  readonly finishReason?: FinishReason;
  readonly error?: SerializedError;
  /**
   * W3C trace context of the producer's stage span for the request, on the first chunk of each edge when the
   * producer traces it: the consumer's chunk hop span links to it (src/tracing/StageSpans.ts). Read as untrusted:
   * anything but a well-formed traceparent is no link.
   */
  readonly traceparent?: string;
}

/** On the wire: the meta plus the body's scalar fields (its arrays travel as tensors). */
interface WireChunkMeta extends ChunkMeta {
  readonly payload?: WirePayload;
}

export interface ReceivedChunk {
  readonly meta: ChunkMeta;
  /** Checked against its kind on receipt (transport/payloadCodec.ts); null for a final chunk without data. */
  readonly body: ChunkBody | null;
  readonly bytes: number;
  readonly receivedAtMs: number;
  /** When the connector gave its bytes, before decoding, on the monotonic clock (src/common/packetMarks.ts). */
  readonly gotAtMs: number;
}

/** A chunk to send: its end-of-stream flag and reason, and its body (absent on an empty final chunk). */
export interface OutgoingChunk {
  readonly final: boolean;
  readonly body?: ChunkBody;
  readonly finishReason?: FinishReason;
  readonly error?: SerializedError;
  /** ChunkMeta.traceparent. */
  readonly traceparent?: string;
}

export type Arrival =
  | {
      readonly requestId: string;
      readonly chunk: ReceivedChunk;
      readonly error?: undefined;
      readonly fromStageId?: undefined;
    }
  /** fromStageId: the upstream whose stream broke (a request may have several, e.g. one per encoder). */
  | {
      readonly requestId: string;
      readonly chunk?: undefined;
      readonly error: ChorusError;
      readonly fromStageId?: string;
    };

export interface ExpectOptions {
  readonly fromInstance: string;
  readonly fromStageId: string;
  /** The stage-id part of the key: the consuming stage, or for outputs to main the producing stage. */
  readonly keyStage: string;
  readonly firstChunkDeadline: number;
  readonly chunkTimeoutMs: number;
  /** The setting that governs these deadlines, named in a timeout error (default chunk_policy.chunk_timeout_ms). */
  readonly timeoutSetting?: string;
  /** Deadlines renewed while the producer lives; absent: the wall clock alone (an encoder's timeout_ms). */
  readonly live?: LiveWait;
}

export interface LiveWait {
  /** Whether the producer is live now (alive, not hung or stopped, still holding the request). */
  readonly producer: () => boolean;
  /** The longest the wait goes on, from its start (its deadline less chunkTimeoutMs). */
  readonly maxWaitMs: number;
}

interface ReceiveToken {
  cancelled: boolean;
  readonly fromInstance: string;
}

export interface SendTarget {
  readonly toInstance: string;
  readonly toStageId: string;
  readonly keyStage: string;
}

export class ChunkTransferAdapter {
  private arrivals: Arrival[] = [];
  private readonly receiving = new Map<string, ReceiveToken[]>();
  private readonly sendSeq = new Map<string, number>(); // `${requestId} ${keyStage}` -> next seq
  private readonly edgeTail = new Map<string, Promise<void>>(); // in-order puts per edge
  private pendingBytes = 0;
  private drainWaiters: { below: number; resolve: () => void }[] = [];
  private closed = false;
  /** Called as each chunk's frame goes into its edge (the first-packet account's `put` mark), when set. */
  onPut: ((requestId: string, toStageId: string) => void) | null = null;

  constructor(
    private readonly connector: Connector,
    private readonly selfInstance: string,
    private readonly selfStageId: string,
    /** Called whenever an arrival is queued, so the step loop wakes (no polling). */
    private readonly onArrival: () => void,
  ) {}

  /** Starts receiving a request's chunks from one upstream edge: seq 0, 1, ... until a final chunk. */
  expect(requestId: string, o: ExpectOptions): void {
    const token: ReceiveToken = { cancelled: false, fromInstance: o.fromInstance };
    const list = this.receiving.get(requestId) ?? [];
    list.push(token);
    this.receiving.set(requestId, list);
    void this.receiveLoop(requestId, o, token);
  }

  private async receiveLoop(requestId: string, o: ExpectOptions, token: ReceiveToken): Promise<void> {
    for (let seq = 0; ; seq++) {
      const key = chunkKey(requestId, o.keyStage, seq);
      const deadline = seq === 0 ? o.firstChunkDeadline : Date.now() + o.chunkTimeoutMs;
      let bytes: Uint8Array;
      let gotAtMs: number;
      try {
        bytes = await this.getWhileLive(key, o, deadline);
        gotAtMs = monotonicMs();
      } catch (err) {
        if (token.cancelled || this.closed) return;
        this.streamEnded(requestId, token); // this stream is over; the request may still have others
        this.push({ requestId, error: receiveError(err, requestId, seq, key, o), fromStageId: o.fromStageId });
        return;
      }
      if (token.cancelled) return;
      let chunk: ReceivedChunk;
      try {
        const frame = decodeFrame<WireChunkMeta>(bytes);
        const { payload, ...m } = frame.meta;
        if (m.requestId !== requestId || m.seq !== seq || m.from !== o.fromStageId) {
          throw new ChorusError(
            ErrorCodes.CHUNK_SEQUENCE,
            `expected chunk ${seq} of ${requestId} from ${o.fromStageId} under key ${key}, ` +
              `got chunk ${m.seq} of ${m.requestId} from ${m.from}: a gap, duplicate or misrouted chunk`,
          );
        }
        const body = payload === undefined ? null : decodeBody(payload, frame.tensors);
        chunk = { meta: m, body, bytes: bytes.byteLength, receivedAtMs: Date.now(), gotAtMs };
      } catch (err) {
        this.streamEnded(requestId, token);
        this.push({
          requestId,
          error:
            err instanceof ChorusError ? err : new ChorusError(ErrorCodes.FRAME_INVALID, String(err), { cause: err }),
          fromStageId: o.fromStageId,
        });
        return;
      }
      this.push({ requestId, chunk });
      if (chunk.meta.final) {
        this.streamEnded(requestId, token);
        return;
      }
    }
  }

  /**
   * The chunk under `key` by `deadline`, or later while the producer is live at each deadline (up to its
   * maxWaitMs); a timeout error says whether the producer was live until the end.
   */
  private async getWhileLive(key: string, o: ExpectOptions, deadline: number): Promise<Uint8Array> {
    const limit = deadline - o.chunkTimeoutMs + (o.live?.maxWaitMs ?? 0);
    for (let renewed = false; ; renewed = true) {
      try {
        return await this.connector.get(o.fromInstance, this.selfInstance, key, deadline);
      } catch (err) {
        const timedOut = err instanceof ChorusError && err.code === ErrorCodes.CHUNK_TIMEOUT;
        if (!timedOut) throw err;
        if (deadline >= limit || !o.live?.producer()) throw renewed ? new LiveWaitEnded(deadline >= limit) : err;
        deadline = Math.min(limit, Date.now() + o.chunkTimeoutMs);
      }
    }
  }

  /** One upstream stream of the request ended; when the last one has, the connector forgets the request. */
  private streamEnded(requestId: string, token: ReceiveToken): void {
    const list = this.receiving.get(requestId);
    if (!list) return;
    const rest = list.filter((t) => t !== token);
    if (rest.length > 0) {
      this.receiving.set(requestId, rest);
      return;
    }
    this.receiving.delete(requestId);
    this.connector.cleanup(requestId);
  }

  private push(a: Arrival): void {
    this.arrivals.push(a);
    this.onArrival();
  }

  /**
   * Hands in what the connector's inbound edges hold now (Connector.readNow): their chunks reach processPendingChunks
   * once the promise turns after this call have run, before the event loop's next look at the edges.
   */
  readNow(): void {
    this.connector.readNow?.();
  }

  /** Everything that arrived since the last call, in arrival order. */
  processPendingChunks(): Arrival[] {
    const out = this.arrivals;
    this.arrivals = [];
    return out;
  }

  get hasPendingArrivals(): boolean {
    return this.arrivals.length > 0;
  }

  /**
   * Queues the next chunk of a request to one target. Chunks of one edge are put in call order; the seq is
   * assigned here so callers cannot create gaps. Resolves when the chunk is in the edge's buffer; rejects when the
   * put fails (backpressure deadline, closed connector).
   */
  saveAsync(requestId: string, target: SendTarget, chunk: OutgoingChunk, deadline: number): Promise<void> {
    if (this.closed) return Promise.reject(new ChorusError(ErrorCodes.CONNECTOR_CLOSED, 'adapter is closed'));
    const seqKey = `${requestId} ${target.keyStage}`;
    const seq = this.sendSeq.get(seqKey) ?? 0;
    if (chunk.final) this.sendSeq.delete(seqKey);
    else this.sendSeq.set(seqKey, seq + 1);
    const encoded = chunk.body ? encodeBody(chunk.body) : null;
    const meta: WireChunkMeta = {
      requestId,
      from: this.selfStageId,
      to: target.toStageId,
      seq,
      final: chunk.final,
      sentAtMs: Date.now(),
      finishReason: chunk.finishReason,
      error: chunk.error,
      ...(chunk.traceparent ? { traceparent: chunk.traceparent } : {}),
      ...(encoded ? { payload: encoded.payload } : {}),
    };
    const parts = encodeFrame(meta, encoded?.tensors ?? {});
    const bytes = frameByteLength(parts);
    const key = chunkKey(requestId, target.keyStage, seq);
    this.pendingBytes += bytes;
    const send = () => {
      this.onPut?.(requestId, target.toStageId);
      return this.connector.put(this.selfInstance, target.toInstance, key, parts, deadline);
    };
    // A connector that keeps call order itself gets the frame now, within the caller's step: the consumer is woken
    // before the producer's step goes on (its other outputs, its bookkeeping), not after it returns (issue 46: that
    // rest of the step was 0.1-7 ms of each hop on a first packet's path). Otherwise each put starts when the
    // previous one on the edge is done.
    let inOrder = false;
    try {
      inOrder = this.connector.putsInOrder?.(this.selfInstance, target.toInstance) ?? false;
    } catch {
      // an edge no connector carries: the put below rejects with why
    }
    // (a failed put must not block the edge for other requests)
    const put = (
      inOrder
        ? putNow(send)
        : (this.edgeTail.get(target.toInstance) ?? Promise.resolve()).catch(() => undefined).then(send)
    ).finally(() => {
      this.pendingBytes -= bytes;
      this.drainWaiters = this.drainWaiters.filter((w) => {
        if (this.pendingBytes > w.below) return true;
        w.resolve();
        return false;
      });
    });
    this.edgeTail.set(
      target.toInstance,
      put.catch(() => undefined),
    );
    return put;
  }

  /** Bytes queued for sending but not yet in an edge buffer. */
  get pendingSendBytes(): number {
    return this.pendingBytes;
  }

  /** Resolves once queued sends are at most `bytes`: the step loop's backpressure point. */
  whenSendsBelow(bytes: number): Promise<void> {
    if (this.pendingBytes <= bytes) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push({ below: bytes, resolve }));
  }

  /**
   * Stops receiving one upstream stream of the request (a Thinker giving up on an encoder that died); the others
   * go on. Chunks that still come on that edge are dropped once the request's last stream ends.
   */
  stopReceiving(requestId: string, fromInstance: string): void {
    for (const token of this.receiving.get(requestId) ?? []) {
      if (token.fromInstance !== fromInstance) continue;
      token.cancelled = true;
      this.streamEnded(requestId, token);
    }
  }

  /** Stops receiving for the request and drops whatever the connector kept for it. */
  cancel(requestId: string): void {
    for (const token of this.receiving.get(requestId) ?? []) token.cancelled = true;
    this.receiving.delete(requestId);
    for (const key of [...this.sendSeq.keys()]) if (key.startsWith(`${requestId} `)) this.sendSeq.delete(key);
    this.arrivals = this.arrivals.filter((a) => a.requestId !== requestId);
    this.connector.cleanup(requestId);
  }

  /** Main let the request go on every stage (its abort): cancel, and what was sent for it that nobody reads goes. */
  abandon(requestId: string): void {
    this.cancel(requestId);
    this.connector.dropSent?.(requestId);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const list of this.receiving.values()) for (const t of list) t.cancelled = true;
    this.receiving.clear();
    for (const w of this.drainWaiters) w.resolve();
    this.drainWaiters = [];
  }
}

/** A wait renewed for a live producer that ended: at its limit (still live), or once the producer was not live. */
class LiveWaitEnded extends Error {
  constructor(readonly atLimit: boolean) {
    super(atLimit ? 'limit' : 'not live');
  }
}

/** Why a stream's receive ended, as the request's error: a timeout says which deadline and what to do. */
function receiveError(err: unknown, requestId: string, seq: number, key: string, o: ExpectOptions): ChorusError {
  const timedOut =
    err instanceof LiveWaitEnded || (err instanceof ChorusError && err.code === ErrorCodes.CHUNK_TIMEOUT);
  if (!timedOut)
    return err instanceof ChorusError
      ? err
      : new ChorusError(ErrorCodes.INTERNAL, `receiving ${key} failed`, { cause: err });
  const setting = o.timeoutSetting ?? 'chunk_policy.chunk_timeout_ms';
  const what = `chunk ${seq} of request ${requestId} from ${o.fromInstance} did not arrive in time`;
  const why = !(err instanceof LiveWaitEnded)
    ? `(${seq === 0 ? 'first-chunk deadline' : `${o.chunkTimeoutMs} ms`}): the upstream stage stalled, or a chunk ` +
      `was lost; raise ${setting} if the stage is just slow`
    : err.atLimit
      ? `(${o.live?.maxWaitMs} ms, chunk_policy.max_chunk_wait_ms, its producer live all along): the chunk was ` +
        'lost, or the stage no longer serves the request'
      : `(past its deadline, waited on while its producer ran, which then stopped): the upstream stage stalled, or ` +
        'the chunk was lost';
  return new ChorusError(ErrorCodes.CHUNK_TIMEOUT, `${what} ${why}`, { cause: err });
}

/** `send()` now, its synchronous throw as a rejection (as a `.then(send)` would have made it). */
function putNow(send: () => Promise<void>): Promise<void> {
  try {
    return send();
  } catch (err) {
    return Promise.reject(err);
  }
}

export function errorChunk(err: unknown): { final: true; finishReason: FinishReason; error: SerializedError } {
  return { final: true, finishReason: 'error', error: serializeError(err) };
}
