/**
 * A helper thread beside a process's step thread (a redis connector's I/O thread, the control plane's heartbeat
 * thread) starts the same way: its first word is `ready` once it is up, or `failed` with why it could not start (and
 * then it exits); an uncaught error ends it too. Its handle watches that here, once: the handle hears its other
 * messages, and when the thread exits, the one error that says why.
 */
import type { Worker } from 'node:worker_threads';
import { ChorusError, deserializeError, ErrorCodes, type SerializedError } from './errors.ts';

/** The thread's start, as it reports it: up, or why not. */
export type ThreadStartReport =
  /** Up (connected and subscribed, its first beat sent: the thread's own condition). */
  | { readonly type: 'ready' }
  /** Could not start: the thread exits after sending it. */
  | { readonly type: 'failed'; readonly error: SerializedError };

export interface HelperThreadEvents<M> {
  /** It reported `ready` (once). */
  ready(): void;
  /** Any message after the start report. */
  message(msg: M): void;
  /**
   * It exited, for whatever reason (closed, failed to start, crashed): the error it failed with when that is a
   * ChorusError, otherwise TRANSPORT_UNAVAILABLE naming the thread (`what`) and its exit code.
   */
  exit(error: ChorusError): void;
}

/** Watches `worker` for the life of the thread. `M`: its messages other than the start report. */
export function watchHelperThread<M extends { readonly type: string }>(
  worker: Worker,
  what: string,
  events: HelperThreadEvents<M>,
): void {
  let failure: Error | null = null;
  worker.on('message', (msg: M | ThreadStartReport) => {
    if (!isStartReport(msg)) events.message(msg);
    else if (msg.type === 'ready') events.ready();
    else failure = deserializeError(msg.error);
  });
  worker.on('error', (err) => {
    failure ??= err;
  });
  worker.once('exit', (code) =>
    events.exit(
      failure instanceof ChorusError
        ? failure
        : new ChorusError(ErrorCodes.TRANSPORT_UNAVAILABLE, `the ${what} exited (code ${code})`, {
            cause: failure ?? undefined,
          }),
    ),
  );
}

function isStartReport(msg: { readonly type: string }): msg is ThreadStartReport {
  return msg.type === 'ready' || msg.type === 'failed';
}
