/** What bench/transport/runTransportBench.ts and its peer process (benchPeer.ts) say to each other. */

export type PeerSetup =
  | { transport: 'shm'; toPeer: string; fromPeer: string }
  | { transport: 'file'; namespace: string }
  | { transport: 'ipc' };

/** First byte of every bench frame. */
export const Tag = {
  Stop: 0,
  Ping: 1, // echo it back unchanged
  Bulk: 2, // consume it
  BulkLast: 3, // consume it, then answer with a 1-byte ack
} as const;

export const READY = 'ready';
/** Deadline for any single wait in the bench: generous, only there so nothing hangs forever. */
export const WAIT_MS = 30_000;
