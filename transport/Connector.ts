/**
 * A connector moves opaque frames between stage instances. It is transport only: keys, ordering,
 * end-of-stream, cancellation and deadlines belong to the ChunkTransferAdapter (transport/adapter).
 *
 * Addresses are stage *instances* ("thinker#0", "talker#1", "main"): every (from, to) pair is one edge
 * with exactly one producer process and one consumer process, which is what lets the shm connector use
 * a single-producer single-consumer ring per edge.
 *
 * Deadlines are absolute wall-clock milliseconds (Date.now() based) so they mean the same in every process.
 */
/** A frame given whole, or as parts written back to back (so callers need not concatenate). */
export type FrameParts = Uint8Array | readonly Uint8Array[];

export interface Connector {
  /** Its kind's name in the registry (transport/kinds.ts). */
  readonly kind: string;
  /**
   * Sends one frame, given whole or as parts (written back to back, so callers need not concatenate). Resolves once the
   * frame is in the edge's buffer. When the buffer is full the call
   * waits for room (backpressure) until `deadline`, then rejects with CHORUS_ERR_BACKPRESSURE_TIMEOUT.
   */
  put(from: string, to: string, key: string, frame: FrameParts, deadline: number): Promise<void>;
  /**
   * Receives the frame stored under `key` on the edge. Waits, without polling, until it arrives or
   * `deadline` passes (rejects with CHORUS_ERR_CHUNK_TIMEOUT). Frames that arrive for other keys are
   * kept for their own get().
   */
  get(from: string, to: string, key: string, deadline: number): Promise<Uint8Array>;
  /**
   * True when puts on the edge take effect in call order without the caller waiting for the previous one to
   * resolve (the connector queues them itself). The adapter then hands each frame over at once instead of one per
   * completed put: over a network that is a round trip per frame saved. Absent: false.
   */
  putsInOrder?(from: string, to: string): boolean;
  /** Drops everything kept for this request (keys start with `${requestId}_`) and rejects its pending gets. */
  cleanup(requestId: string): void;
  /**
   * The request was let go on every instance (main's abort): drops what this instance sent for it that outlives its
   * consumer (redis lists; shm frames are dropped by their reader's cleanup). Absent: nothing outlives it.
   */
  dropSent?(requestId: string): void;
  /**
   * Hands the frames its inbound edges already hold to their gets as the promise turns after this call run, instead
   * of at the event loop's next look at them (shm: a ring's waiting read ends at once). A step loop calls it as a step
   * ends, when what came during the step is the next step's input. Absent: frames reach their gets only through the
   * event loop.
   */
  readNow?(): void;
  /** Idempotent. Pending gets and puts reject with CHORUS_ERR_CONNECTOR_CLOSED. */
  close(): Promise<void>;
}

/** The key of chunk `seq` of a request on the edge into `toStageId`: `{requestId}_{stageId}_{seq}`. */
export function chunkKey(requestId: string, toStageId: string, seq: number): string {
  return `${requestId}_${toStageId}_${seq}`;
}

export function requestIdOfKey(key: string): string {
  // requestId may itself contain '_'; stageId and seq never do (the config schema forbids '_' in stage ids).
  const last = key.lastIndexOf('_');
  const prev = key.lastIndexOf('_', last - 1);
  return key.slice(0, prev);
}
