/**
 * The turn policy of OpenAI's `server_vad`, as a pure state machine over per-window speech probabilities: no
 * model, no clock, no I/O (VadService feeds it the Silero probabilities; tests feed it arrays).
 *
 * Hysteresis as in Silero's VADIterator: speech starts on a window with p >= threshold; once speaking, a window
 * with p < threshold - 0.15 (at least 0.01) opens a silence run, a window with p >= threshold cancels it, and a
 * window in between leaves it as it is. The turn ends when a silence run has lasted silenceDurationMs.
 *
 * Times are ms on the caller's audio timeline. Window k after the last reset covers
 * [originMs + k*windowMs, originMs + (k+1)*windowMs), and events are reported in whole ms:
 * - speech_started.audioStartMs: start of the first speech window minus prefixPaddingMs, clamped at originMs
 *   (padding never reaches into audio from before a reset, which was committed or cleared).
 * - speech_stopped.audioEndMs: end of the last window before the silence run, i.e. where speech ended (OpenAI's
 *   audio_end_ms is the same point). The event itself fires silenceDurationMs of audio later.
 * - idle_timeout: driven by AUDIO time, not wall time: it fires when idleTimeoutMs of audio has gone by with no
 *   speech since the last speech_stopped (or since the last idle_timeout: it re-arms, as OpenAI re-arms it after
 *   the response it triggers). A client that stops sending audio altogether gets no idle_timeout from here.
 *   audioStartMs..audioEndMs is that silent stretch, as in OpenAI's input_audio_buffer.timeout_triggered.
 */

export interface TurnParams {
  /** Speech probability (0..1) at which speech starts. */
  readonly threshold: number;
  /** Audio kept before the detected start of speech. */
  readonly prefixPaddingMs: number;
  /** Non-speech that ends a turn. */
  readonly silenceDurationMs: number;
  /** null: off. */
  readonly idleTimeoutMs: number | null;
}

export type TurnEvent =
  | { type: 'speech_started'; audioStartMs: number }
  | { type: 'speech_stopped'; audioEndMs: number }
  | { type: 'idle_timeout'; audioStartMs: number; audioEndMs: number };

/** OpenAI's server_vad defaults. */
export const DEFAULT_TURN_PARAMS: TurnParams = Object.freeze({
  threshold: 0.5,
  prefixPaddingMs: 300, // 0.3 s
  silenceDurationMs: 500, // 0.5 s
  idleTimeoutMs: null,
});

/** How far below the threshold a window must fall to count as silence once speaking (Silero's reference). */
export const HYSTERESIS = 0.15;

/** Throws a RangeError naming the first bad field; the caller (session.update validation) turns it into an error. */
export function checkTurnParams(params: TurnParams): void {
  const { threshold, prefixPaddingMs, silenceDurationMs, idleTimeoutMs } = params;
  if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`threshold must be in 0..1, got ${threshold}`);
  const ms: Array<[string, number | null]> = [
    ['prefixPaddingMs', prefixPaddingMs],
    ['silenceDurationMs', silenceDurationMs],
    ['idleTimeoutMs', idleTimeoutMs],
  ];
  for (const [name, value] of ms) {
    if (value !== null && !(Number.isFinite(value) && value >= 0))
      throw new RangeError(`${name} must be a finite number of ms >= 0, got ${value}`);
  }
}

export class TurnDetector {
  readonly windowMs: number;
  #params: TurnParams;
  #originMs = 0;
  #windows = 0; // windows since the last reset
  #speaking = false;
  /** Start of the current silence run while speaking, or null. */
  #silenceFromMs: number | null = null;
  /** Where idle time is counted from, or null when idle_timeout is not armed. */
  #idleFromMs: number | null = null;

  constructor(params: TurnParams, windowMs: number, originMs = 0) {
    checkTurnParams(params);
    this.#params = params;
    this.windowMs = windowMs;
    this.#originMs = originMs;
  }

  get params(): TurnParams {
    return this.#params;
  }

  get speaking(): boolean {
    return this.#speaking;
  }

  /** End of the last window fed, on the caller's timeline. */
  get positionMs(): number {
    return this.#originMs + this.#windows * this.windowMs;
  }

  /** New parameters apply from the next window; a turn in progress continues under them. */
  update(params: TurnParams): void {
    checkTurnParams(params);
    this.#params = params;
  }

  /** Forgets the turn state; window 0 now starts at originMs. */
  reset(originMs: number): void {
    this.#originMs = originMs;
    this.#windows = 0;
    this.#speaking = false;
    this.#silenceFromMs = null;
    this.#idleFromMs = null;
  }

  /**
   * Keeps the turn state but moves the window grid: the next window starts at positionMs. For audio that was
   * lost (a VAD worker restarted): the turn in progress goes on, and its silence run counts the gap as silence.
   */
  rebase(positionMs: number): void {
    this.#originMs = positionMs;
    this.#windows = 0;
  }

  /** Feeds the next window's speech probability; returns the events it causes (usually none). */
  push(probability: number): TurnEvent[] {
    const { threshold, prefixPaddingMs, silenceDurationMs, idleTimeoutMs } = this.#params;
    const startMs = this.positionMs;
    this.#windows++;
    const endMs = this.positionMs;

    if (!this.#speaking) {
      if (probability >= threshold) {
        this.#speaking = true;
        this.#silenceFromMs = null;
        this.#idleFromMs = null;
        const audioStartMs = Math.max(this.#originMs, startMs - prefixPaddingMs);
        return [{ type: 'speech_started', audioStartMs: Math.round(audioStartMs) }];
      }
      if (this.#idleFromMs !== null && idleTimeoutMs !== null && endMs - this.#idleFromMs >= idleTimeoutMs) {
        const audioStartMs = this.#idleFromMs;
        this.#idleFromMs = endMs; // re-armed: fires again after another idleTimeoutMs of no speech
        return [{ type: 'idle_timeout', audioStartMs: Math.round(audioStartMs), audioEndMs: Math.round(endMs) }];
      }
      return [];
    }

    // Speaking.
    if (probability >= threshold) this.#silenceFromMs = null;
    else if (probability < Math.max(threshold - HYSTERESIS, 0.01) && this.#silenceFromMs === null)
      this.#silenceFromMs = startMs;
    if (this.#silenceFromMs === null || endMs - this.#silenceFromMs < silenceDurationMs) return [];
    const audioEndMs = this.#silenceFromMs;
    this.#speaking = false;
    this.#silenceFromMs = null;
    this.#idleFromMs = endMs;
    return [{ type: 'speech_stopped', audioEndMs: Math.round(audioEndMs) }];
  }
}

/** Runs a fresh detector over a whole sequence of window probabilities (tests, offline use). */
export function detectTurns(probabilities: Iterable<number>, params: TurnParams, windowMs: number): TurnEvent[] {
  const detector = new TurnDetector(params, windowMs);
  const events: TurnEvent[] = [];
  for (const p of probabilities) events.push(...detector.push(p));
  return events;
}
