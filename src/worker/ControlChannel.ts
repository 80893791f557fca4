/**
 * The control plane between main and one stage instance: small messages (add, abort, ready, finished, stats),
 * never tensors (those ride the connector). The worker is written against this interface; src/control implements it:
 * on one machine the parent/child IPC pipe (src/control/ipc), a stage on another machine over Redis
 * (src/control/redis), without the supervisor or the step loop knowing the difference.
 */
export interface ControlChannel<Out, In> {
  /** Sends one message; false when the peer is gone (the message is dropped: the caller's death path handles it). */
  send(msg: Out): boolean;
  /** Subscribes to incoming messages; returns the unsubscribe. */
  onMessage(handler: (msg: In) => void): () => void;
  /** The peer went away (it exited, or the link broke). */
  onClose(handler: () => void): void;
  readonly connected: boolean;
  /** Stops the channel from this side. Idempotent. */
  close(): void;
}

/** Hard limit on one control message, checked on both ends (a bug must not turn into a multi-MB message). */
export const MAX_CONTROL_MESSAGE_BYTES = 1 << 20; // 1 MiB
