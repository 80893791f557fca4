/**
 * Ends a response whose client stopped reading. A slow reader's request is paused (its stream buffer is full) and,
 * since the schedulers give a paused request's batch slot to others, it costs them nothing while it waits; but it
 * still holds its KV, its session's slot and, with no chunk coming, would end after the 30 s chunk timeout with a
 * CHUNK_TIMEOUT that blames the server. Paused for longer than the stall timeout (20 s by default, under that chunk
 * timeout so the client is told the real reason), the response is failed with CHORUS_ERR_CLIENT_TOO_SLOW and every
 * stage freed.
 *
 * A client that reads as fast as the audio plays is never caught: a pause lasts until half the buffer has been read
 * (2 MiB by default: ~16 s of 24 kHz audio as base64 pcm16), so it resumes well within the timeout.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';

export class ClientStallWatch {
  readonly #timeoutMs: number;
  readonly #onStall: () => void;
  #timer: NodeJS.Timeout | null = null;

  /** `timeoutMs` 0 turns the watch off (a paused request then waits as long as its client). */
  constructor(timeoutMs: number, onStall: () => void) {
    this.#timeoutMs = timeoutMs;
    this.#onStall = onStall;
  }

  /** The request was paused for its client: the clock starts (a pause already timed goes on being timed). */
  paused(): void {
    if (this.#timer || this.#timeoutMs <= 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#onStall();
    }, this.#timeoutMs);
    // A stalled client must not keep a closing server alive: its response ends with the server anyway.
    this.#timer.unref();
  }

  /** The client read enough for the request to resume (or the response ended): the clock stops. */
  resumed(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}

/** What a stalled client is told: what happened, and what to do about it. */
export function clientTooSlowError(timeoutMs: number, maxStreamBufferBytes: number): ChorusError {
  const seconds = Number((timeoutMs / 1000).toFixed(3));
  return new ChorusError(
    ErrorCodes.CLIENT_TOO_SLOW,
    `the client read too slowly: the server's buffer for this response (${maxStreamBufferBytes} bytes) stayed full ` +
      `for ${seconds} s, so the response was ended to free the model for others. Read the stream as it arrives, at ` +
      `least as fast as it plays (24 kHz audio is ~64 kB/s of base64); the server's operator sets the ` +
      `buffer (maxStreamBufferBytes) and how long a paused response waits (--client-stall-timeout)`,
  );
}
