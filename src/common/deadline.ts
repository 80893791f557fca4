/**
 * A deadline judged from the event loop that also reads what would meet it. After a stall (a busy process), the
 * loop runs the timers that came due before it polls for I/O, so a timer alone fires before the socket or pipe read
 * that arrived in time (a frame, a READY, a heartbeat) and fails a wait that was met. onDeadline waits for that poll.
 */

const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout treats anything larger as 1 ms

export interface DeadlineOptions {
  /** The wait keeps no process alive (a request's wait, not a server's). */
  readonly unref?: boolean;
}

/**
 * Calls `fn` once the absolute deadline (Date.now() ms) has passed; +Infinity never fires.
 * Re-arms when the timer fires early (libuv measures delays from its cached loop time, which can lag
 * Date.now() by the duration of the current tick) so `fn` never runs before the deadline. At the deadline, `fn`
 * waits for the loop's next poll for I/O: after a stall timers run before the reads that waited behind them, and
 * what arrived in time would otherwise come only after its wait had failed. Returns a cancel function.
 */
export function onDeadline(deadline: number, fn: () => void, options: DeadlineOptions = {}): () => void {
  if (deadline === Number.POSITIVE_INFINITY) return () => {};
  let timer: NodeJS.Timeout | undefined;
  let afterPoll: NodeJS.Immediate | undefined;
  const arm = (ms: number): void => {
    timer = setTimeout(check, Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS));
    if (options.unref) timer.unref();
  };
  const check = (): void => {
    const remainingMs = deadline - Date.now();
    if (remainingMs > 0) return arm(remainingMs);
    afterPoll = setImmediate(fn);
    if (options.unref) afterPoll.unref();
  };
  arm(deadline - Date.now());
  return () => (clearTimeout(timer), clearImmediate(afterPoll));
}
