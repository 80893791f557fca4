/**
 * Every message between a RedisConnector (the stage's step thread) and its I/O thread, as discriminated unions.
 * They cross by postMessage; frames and elements travel as transferred ArrayBuffers (moved, not copied).
 */
import type { SerializedError } from '../../src/common/errors.ts';
import type { ThreadStartReport } from '../../src/common/helperThread.ts';
import type { RedisLinkOptions } from './redisLink.ts';

/** workerData of the I/O thread. */
export interface RedisIoData {
  /** The instance whose bell and ack channels the thread subscribes to ("talker#0", "main"). */
  readonly self: string;
  readonly link: RedisLinkOptions;
  readonly keyPrefix: string;
  readonly ttlSeconds: number;
}

export type ToRedisIo =
  /** RPUSH the element onto the request's list into `to`, refresh its TTL, ring `to`'s bell. Answered by `pushed`. */
  | {
      readonly type: 'push';
      readonly id: number;
      readonly requestId: string;
      readonly to: string;
      readonly element: Uint8Array;
    }
  /**
   * Delete the request's list into this instance (cleanup), or its lists into `into` (the frames this instance pushed
   * for it: the request let go everywhere, Connector.dropSent), after the pushes before it on the same connection.
   */
  | { readonly type: 'del'; readonly requestId: string; readonly into?: readonly string[] }
  /** Close both connections and exit. */
  | { readonly type: 'close' }
  /** Tests only: throw from the message loop, as a bug in the thread would (the crash path). */
  | { readonly type: 'crashForTest' }
  /** Tests only: take pushes and never answer them, as a stalled thread would (the put deadline path). */
  | { readonly type: 'muteForTest' };

/** One popped frame, already acked to its producer. */
export interface PoppedFrame {
  readonly from: string;
  readonly key: string;
  readonly frame: Uint8Array;
}

/** What the thread reports once started (`ready`: connected and subscribed; ThreadStartReport before that). */
export type IoReport =
  | { readonly type: 'pushed'; readonly id: number; readonly error?: SerializedError }
  /** Frames popped from this instance's lists, in list order. */
  | { readonly type: 'frames'; readonly frames: PoppedFrame[] }
  /** Consumer `to` popped `bytes` of this instance's frames of the request: credit back. */
  | { readonly type: 'ack'; readonly to: string; readonly bytes: number; readonly requestId: string }
  /** The link went down; what is waited on must fail (pub/sub messages of the outage are lost). */
  | { readonly type: 'down'; readonly error: SerializedError }
  /** Every connection is back (and resubscribed). */
  | { readonly type: 'up' };

export type FromRedisIo = ThreadStartReport | IoReport;
