/**
 * Closes a realtime session that has sent nothing for `idleMs` while no response runs for it, so abandoned sockets do
 * not hold session slots for good (64 of them refuse every new client). A client listening to a long answer is not
 * idle. One timer, re-armed lazily: activity only records the time, so a busy session costs no timer churn.
 *
 * A timer that finds the session idle looks once more after the loop's next poll for I/O: after a stall (a busy
 * process) timers run before the socket reads that waited behind them, so the event that came in time would
 * otherwise be read only after the session was closed for lacking it.
 */
const BUSY_RECHECK_MS = 1000;

export class IdleWatch {
  readonly #idleMs: number;
  readonly #busy: () => boolean;
  readonly #onIdle: () => void;
  #lastActiveMs = performance.now();
  #timer: NodeJS.Timeout | null = null;
  #confirm: NodeJS.Immediate | null = null;
  #wasBusy = false;

  constructor(idleMs: number, busy: () => boolean, onIdle: () => void) {
    this.#idleMs = idleMs;
    this.#busy = busy;
    this.#onIdle = onIdle;
    this.#arm(idleMs);
  }

  /** The client sent something. */
  touch(): void {
    this.#lastActiveMs = performance.now();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#confirm) clearImmediate(this.#confirm);
    this.#timer = null;
    this.#confirm = null;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), ms);
    this.#timer.unref(); // a session's socket keeps the process alive, not its idle timer
  }

  #check(confirmed = false): void {
    // While answered, look again within a second; the idle time starts at the first look that finds it done (never
    // before the response ended: a session is closed idleMs to idleMs + 1 s after its answer, never sooner).
    if (this.#busy()) {
      this.#wasBusy = true;
      return this.#arm(Math.min(this.#idleMs, BUSY_RECHECK_MS));
    }
    if (this.#wasBusy) {
      this.#wasBusy = false;
      this.touch();
    }
    const idleForMs = performance.now() - this.#lastActiveMs;
    if (idleForMs < this.#idleMs) return this.#arm(this.#idleMs - idleForMs);
    this.#timer = null;
    if (!confirmed) {
      this.#confirm = setImmediate(() => ((this.#confirm = null), this.#check(true))); // after the I/O poll
      return;
    }
    this.#onIdle();
  }
}
