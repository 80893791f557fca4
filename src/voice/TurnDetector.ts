/**
 * The turn policy of OpenAI's `server_vad`, as a pure state machine over per-window speech probabilities: no
 * model, no clock, no I/O (VadService feeds it the Silero probabilities; tests feed it arrays).
 *
 * Hysteresis as in Silero's VADIterator: speech starts on a window with p >= threshold; once speaking, a window
 * with p < threshold - 0.15 (at least 0.01) opens a silence run, a window with p >= threshold cancels it, and a
 * window in between leaves it as it is. The turn ends when a silence run has lasted silenceDurationMs.
 *
 * Where the silence run starts (what the silence is counted from) is where the speech ended, not where the
 * detector became sure of it: the hysteresis only CONFIRMS a fall, so the run is dated back to the first window of
 * the descent below the threshold, and further back by the model's known lag (`speechEndLagMs`: Silero rates the
 * first window after the last phoneme as speech, 0.87-0.98 on 12 of the 16 bench sentences, because its 64-sample
 * context and recurrent state still carry the phoneme). It never reaches back before the speech began. Without
 * this, every turn ended 64-96 ms of audio late (measured: `vad_end_lag_ms` 80 ms p50 in bench/README.md).
 * Where the windows carry the signal's activity (SignalActivity.ts: where each window's signal stops being louder
 * than the room), the end is dated to the 4 ms sub-frame instead: the last active one in the SIGNAL_SEARCH_WINDOWS
 * windows before the fall (Silero decided that the speech ended; the signal says when). The model lag is the
 * fallback while the room's floor is unknown.
 *
 * Tentative events (not sent to clients): silence_started when a silence run opens, silence_cancelled when speech
 * resumes before it lasted silenceDurationMs. A session may start its answer at silence_started and hold it until
 * speech_stopped confirms the turn (VoiceTurns' speculative answer). Both carry clipEndMs: the audio the turn's
 * item keeps, which ends COMMIT_TAIL_MS after audioEndMs (and is always analysed by silence_started, so a held
 * answer and the committed item hear the same audio).
 *
 * Times are ms on the caller's audio timeline. Window k after the last reset covers
 * [originMs + k*windowMs, originMs + (k+1)*windowMs), and events are reported in whole ms:
 * - speech_started.audioStartMs: start of the first speech window minus prefixPaddingMs, clamped at originMs
 *   (padding never reaches into audio from before a reset, which was committed or cleared).
 * - speech_stopped.audioEndMs: end of the last window before the silence run, i.e. where speech ended (OpenAI's
 *   audio_end_ms is the same point). The event itself fires silenceDurationMs of audio later, by the audio clock
 *   (advance(): the window in progress need not be rated yet).
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
  /**
   * semantic_vad: once a silence run has lasted probeMs, an end_of_turn_probe asks the end-of-turn model; the turn
   * ends at confirmEndOfTurn() if its P(complete) >= threshold, else at silenceDurationMs as always. Absent: off.
   */
  readonly endOfTurn?: { readonly probeMs: number; readonly threshold: number };
}

export type TurnEvent =
  | { type: 'speech_started'; audioStartMs: number }
  | { type: 'speech_stopped'; audioEndMs: number; clipEndMs: number }
  | { type: 'idle_timeout'; audioStartMs: number; audioEndMs: number }
  | { type: 'silence_started'; audioEndMs: number; clipEndMs: number }
  | { type: 'silence_cancelled' }
  /** The silence run `runId` lasted endOfTurn.probeMs: ask the model about the turn from turnStartMs on. */
  | { type: 'end_of_turn_probe'; runId: number; turnStartMs: number };

/** silence_started / silence_cancelled: for the session's own use, never announced to a client. */
export function isTentative(e: TurnEvent): boolean {
  return e.type === 'silence_started' || e.type === 'silence_cancelled' || e.type === 'end_of_turn_probe';
}

/** The audio a turn's item keeps past where the speech ended (two 32 ms windows: the decay of the last phoneme). */
export const COMMIT_TAIL_MS = 64;

/** OpenAI's server_vad defaults. */
export const DEFAULT_TURN_PARAMS: TurnParams = Object.freeze({
  threshold: 0.5,
  prefixPaddingMs: 300, // 0.3 s
  silenceDurationMs: 500, // 0.5 s
  idleTimeoutMs: null,
});

/** Windows before the fall searched for the signal's end: Silero's probability falls 0-170 ms after it. */
export const SIGNAL_SEARCH_WINDOWS = 6;
/** Windows whose activity the detector keeps (a silence run may be confirmed some windows after the fall). */
const ACTIVITY_HISTORY = 32;

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
  const end = params.endOfTurn;
  if (end && !(end.threshold >= 0 && end.threshold <= 1 && Number.isFinite(end.probeMs) && end.probeMs >= 0))
    throw new RangeError(`endOfTurn must be {probeMs >= 0, threshold in 0..1}, got ${JSON.stringify(end)}`);
}

export class TurnDetector {
  readonly windowMs: number;
  #params: TurnParams;
  #originMs = 0;
  #windows = 0; // windows since the last reset
  #speaking = false;
  /** Start of the first speech window of the turn (the silence run never reaches back before it). */
  #speechFromMs = 0;
  /** Start of the first window of the current descent below the threshold while speaking, or null. */
  #fallFromMs: number | null = null;
  /** Start of the current silence run while speaking, or null; and the clip end it fixed. */
  #silenceFromMs: number | null = null;
  #clipEndMs = 0;
  readonly #speechEndLagMs: number;
  /** Audio pushed so far (advance()), rated or not, on the caller's timeline. */
  #audioClockMs = 0;
  /** Where idle time is counted from, or null when idle_timeout is not armed. */
  #idleFromMs: number | null = null;
  /** The last windows' signal activity (ms into the window where it ends; null: unknown), newest last. */
  #activity: Array<number | null> = [];
  /** Silence runs opened so far (each one's id), and whether the current one was probed. */
  #silenceRuns = 0;
  #probed = false;
  /** Where the turn's audio starts (speech_started's audioStartMs). */
  #turnStartMs = 0;

  /** speechEndLagMs: how late the model's probability falls after the speech ends (Silero: one window). */
  constructor(params: TurnParams, windowMs: number, originMs = 0, speechEndLagMs = 0) {
    checkTurnParams(params);
    this.#params = params;
    this.windowMs = windowMs;
    this.#originMs = originMs;
    this.#audioClockMs = originMs;
    this.#speechEndLagMs = speechEndLagMs;
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
    this.#audioClockMs = originMs;
    this.#windows = 0;
    this.#speaking = false;
    this.#fallFromMs = null;
    this.#silenceFromMs = null;
    this.#idleFromMs = null;
    this.#activity = [];
  }

  /**
   * Keeps the turn state but moves the window grid: the next window starts at positionMs. For audio that was
   * lost (a VAD worker restarted): the turn in progress goes on, and its silence run counts the gap as silence.
   */
  rebase(positionMs: number): void {
    this.#originMs = positionMs;
    this.#windows = 0;
    this.#activity = [];
  }

  /**
   * Feeds the next window's speech probability, and where its signal stops being louder than the room (ms into
   * the window, 0 if it never is; undefined if unknown); returns the events it causes (usually none).
   */
  push(probability: number, activeUntilMs?: number): TurnEvent[] {
    const { threshold, prefixPaddingMs, silenceDurationMs, idleTimeoutMs } = this.#params;
    const startMs = this.positionMs;
    this.#windows++;
    this.#activity.push(activeUntilMs ?? null);
    if (this.#activity.length > ACTIVITY_HISTORY) this.#activity.shift();
    const endMs = this.positionMs;

    if (!this.#speaking) {
      if (probability >= threshold) {
        this.#speaking = true;
        this.#speechFromMs = startMs;
        this.#fallFromMs = null;
        this.#silenceFromMs = null;
        this.#idleFromMs = null;
        const audioStartMs = Math.max(this.#originMs, startMs - prefixPaddingMs);
        this.#turnStartMs = audioStartMs;
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
    if (probability >= threshold) {
      this.#fallFromMs = null;
      if (this.#silenceFromMs === null) return [];
      this.#silenceFromMs = null;
      return [{ type: 'silence_cancelled' }];
    }
    this.#fallFromMs ??= startMs;
    const events: TurnEvent[] = [];
    if (probability < Math.max(threshold - HYSTERESIS, 0.01) && this.#silenceFromMs === null) {
      const from = Math.max(this.#speechFromMs, this.#signalEndMs() ?? this.#fallFromMs - this.#speechEndLagMs);
      this.#silenceFromMs = from;
      this.#silenceRuns++;
      this.#probed = false;
      this.#clipEndMs = Math.min(endMs, from + COMMIT_TAIL_MS);
      events.push({ type: 'silence_started', audioEndMs: from, clipEndMs: this.#clipEndMs });
    }
    if (this.#silenceFromMs === null) return events;
    if (endMs - this.#silenceFromMs >= silenceDurationMs) events.push(this.#stop(endMs));
    else events.push(...this.#probe(endMs), ...this.advance(this.#audioClockMs)); // the clock may be past the silence
    return events;
  }

  /** semantic_vad: the end_of_turn_probe of the silence run in progress, once it has lasted probeMs (once a run). */
  #probe(nowMs: number): TurnEvent[] {
    const probeMs = this.#params.endOfTurn?.probeMs;
    if (probeMs === undefined || this.#probed || this.#silenceFromMs === null) return [];
    if (nowMs - this.#silenceFromMs < probeMs) return [];
    this.#probed = true;
    return [{ type: 'end_of_turn_probe', runId: this.#silenceRuns, turnStartMs: Math.round(this.#turnStartMs) }];
  }

  /**
   * The end-of-turn model says silence run `runId` ends the turn: it does, if that run is still the one in progress
   * (speech may have resumed, or the turn ended on its silence bound, while the model ran).
   */
  confirmEndOfTurn(runId: number): TurnEvent[] {
    if (!this.#speaking || this.#silenceFromMs === null || runId !== this.#silenceRuns) return [];
    return [this.#stop(Math.max(this.#audioClockMs, this.positionMs))];
  }

  /**
   * The audio clock: `audioMs` of audio has been pushed (the model rates it a window later). A silence run ends the
   * turn as soon as the clock is silenceDurationMs past its start, without waiting for the window in progress to be
   * rated, provided every window before it was: the unrated rest is at most one window, and the model rates the
   * first window of new speech low anyway (it lags a window, as at the end of speech). Saves the wait for that
   * window's end and the VAD's round trip (~25 ms of every turn). If the model is further behind, its windows decide.
   */
  advance(audioMs: number): TurnEvent[] {
    this.#audioClockMs = Math.max(this.#audioClockMs, audioMs);
    const clock = this.#audioClockMs;
    if (!this.#speaking || this.#silenceFromMs === null) return [];
    if (clock - this.#silenceFromMs < this.#params.silenceDurationMs)
      return clock - this.positionMs > this.windowMs ? [] : this.#probe(clock); // as below: unrated audio decides
    if (clock - this.positionMs > this.windowMs) return []; // more than the window in progress unrated: they decide
    return [this.#stop(clock)];
  }

  /**
   * The end of the last active sub-frame in the SIGNAL_SEARCH_WINDOWS windows before the fall (the start of the
   * earliest of them if none is active), or null if one of them has no known activity.
   */
  #signalEndMs(): number | null {
    const fall = Math.round((this.#fallFromMs! - this.#originMs) / this.windowMs); // window index since the origin
    const newest = this.#windows - 1;
    for (let k = fall - 1; k >= fall - SIGNAL_SEARCH_WINDOWS; k--) {
      if (k < 0) return this.#originMs;
      const activeUntilMs = this.#activity[this.#activity.length - 1 - (newest - k)] ?? null;
      if (activeUntilMs === null) return null;
      if (activeUntilMs > 0) return this.#originMs + k * this.windowMs + activeUntilMs;
    }
    return this.#originMs + (fall - SIGNAL_SEARCH_WINDOWS) * this.windowMs;
  }

  #stop(atMs: number): TurnEvent {
    const audioEndMs = this.#silenceFromMs!;
    this.#speaking = false;
    this.#fallFromMs = null;
    this.#silenceFromMs = null;
    this.#idleFromMs = atMs;
    return { type: 'speech_stopped', audioEndMs: Math.round(audioEndMs), clipEndMs: this.#clipEndMs };
  }
}

/**
 * Runs a fresh detector over a whole sequence of window probabilities (tests, offline use); the tentative events
 * (silence_started / silence_cancelled) only with `tentative`.
 */
export function detectTurns(
  probabilities: Iterable<number>,
  params: TurnParams,
  windowMs: number,
  opts: { speechEndLagMs?: number; tentative?: boolean } = {},
): TurnEvent[] {
  const detector = new TurnDetector(params, windowMs, 0, opts.speechEndLagMs ?? 0);
  const events: TurnEvent[] = [];
  for (const p of probabilities) events.push(...detector.push(p));
  return opts.tentative ? events : events.filter((e) => !isTentative(e));
}
