/**
 * Server-side voice turns for one Realtime session (turn_detection: server_vad): the appended input audio also
 * goes to a Silero VAD stream (src/voice/VadService.ts, off the main thread), whose turn events the session
 * turns into speech_started / speech_stopped / timeout_triggered, a commit and, with create_response, a response;
 * with interrupt_response, speech over a response cancels it (barge-in).
 *
 * The VAD service starts on the first session that asks for server_vad (it loads a model in a worker thread), so a
 * server whose clients commit turns themselves never pays for it. Audio appended while it starts is kept and fed
 * once it is up, so no speech is missed.
 */
import { ErrorCodes, ChorusError } from '../../common/errors.ts';
import type { ServerEvent } from './ServerEvent.ts';
import type { TurnDetectionResource } from './SessionResource.ts';
import { newId } from './serverEvents.ts';
import type { SpokenText } from './ResponseStream.ts';
import type { TurnEvent, VadService, VadStream } from '../../voice/index.ts';
import { turnParams } from './turnDetection.ts';

/** What the turns need of their session. */
export interface TurnHost {
  send(event: ServerEvent): void;
  /** The response running now, or null. */
  active(): { readonly finished: boolean; cancel(reason: 'turn_detected'): void } | null;
  /** Input audio appended in the session, ms, and where the uncommitted buffer starts on that timeline. */
  audioMs(): number;
  bufferStartMs(): number;
  hasInputAudio(): boolean;
  /** Commits the input buffer as user item `itemId`: all of it, or up to `clipEndMs` on the VAD's timeline. */
  commit(itemId: string, clipEndMs?: number): void;
  /** Answers the committed turn (create_response); `turnEndedAtMs` for chorus_voice_ttfp_seconds. */
  respond(turnEndedAtMs: number): void;
  /**
   * The VAD first heard the silence that may end the turn: start its answer held (from the audio up to clipEndMs),
   * for respond() to adopt at speech_stopped. Nothing of it reaches the client before then.
   */
  speculate(clipEndMs: number): void;
  /** The turn went on: the held answer (if any) is cancelled unheard. */
  dropSpeculation(): void;
  /**
   * speech_started was announced: the turn's audio so far may be prefilled now (the VAD may have heard the speech
   * after the last append, when no append would come to start it).
   */
  speechStarted(): void;
  /** A turn event could not be acted on (the client hears an error event). */
  fail(err: unknown): void;
  /** server_vad could not start: turn detection is off again. */
  disabled(err: ChorusError): void;
  /**
   * semantic_vad's end-of-turn model did not load: the turn detection to run instead (the YAML's silence fallback,
   * announced by the host) or null (off; the host sent the error).
   */
  turnModelFailed(err: ChorusError): TurnDetectionResource | null;
}

export class VoiceTurns {
  #stream: VadStream | null = null;
  /** The user item the turn being spoken will be committed as (named at speech_started). */
  #turnItemId: string | null = null;
  #opening: Promise<void> | null = null;
  #service: VadService | null = null;
  #early: Int16Array[] = [];
  #params: TurnDetectionResource | null = null;
  #closed = false;

  constructor(
    private readonly vad: () => Promise<VadService>,
    private readonly host: TurnHost,
  ) {}

  /** Between speech_started and the end of that turn. */
  get inTurn(): boolean {
    return this.#turnItemId !== null;
  }

  get active(): TurnDetectionResource | null {
    return this.#params;
  }

  /** Applies turn_detection (null: manual turns, the VAD stream is closed). */
  configure(params: TurnDetectionResource | null): void {
    this.#params = params;
    if (params === null) {
      this.#stream?.close();
      this.#stream = null;
      this.#early = [];
      return;
    }
    const wanted = turnParams(params);
    if (this.#stream && (!wanted.endOfTurn || this.#service?.turnModelLoaded)) return this.#stream.update(wanted);
    if (this.#opening) return; // the stream opens (or changes) with the params in effect then
    this.#opening = this.vad()
      .then(async (service) => {
        this.#service = service;
        await this.#apply(service);
      })
      .catch((err: unknown) => {
        this.#params = null;
        this.#early = [];
        this.host.disabled(
          new ChorusError(
            ErrorCodes.INTERNAL,
            `server_vad could not start (${String(err)}): turn detection is off, commit turns with ` +
              'input_audio_buffer.commit',
            { cause: err },
          ),
        );
      })
      .finally(() => (this.#opening = null));
  }

  /**
   * Opens the stream, or changes it, with the params in effect; semantic_vad's end-of-turn model is loaded first
   * (once per server). Params may change while it loads: the loop applies the newest.
   */
  async #apply(service: VadService): Promise<void> {
    for (;;) {
      const params = this.#params;
      if (this.#closed || params === null) return;
      const wanted = turnParams(params);
      if (wanted.endOfTurn && !service.turnModelLoaded) {
        try {
          await service.loadTurnModel();
        } catch (err) {
          if (this.#closed) return;
          if (this.#params === params) this.#params = this.host.turnModelFailed(err as ChorusError);
          if (this.#params === null) this.configure(null);
        }
        continue;
      }
      if (this.#stream) return this.#stream.update(wanted);
      this.#stream = service.open(wanted, (e) => this.#onTurn(e));
      for (const pcm of this.#early) this.#stream.push(pcm);
      this.#early = [];
      return;
    }
  }

  /** Appended input audio (pcm16 24 kHz, whole samples). */
  push(pcm16: Buffer): void {
    if (this.#params === null) return;
    // A view when the Buffer is 2-byte aligned (the VAD copies what it keeps); a copy when it sits at an odd offset
    // in a pooled allocation (Int16Array needs 2-byte alignment). Kept ones (#early) are always copies.
    const n = pcm16.byteLength >> 1;
    let samples: Int16Array;
    if (this.#stream && pcm16.byteOffset % 2 === 0) samples = new Int16Array(pcm16.buffer, pcm16.byteOffset, n);
    else {
      samples = new Int16Array(n);
      new Uint8Array(samples.buffer).set(pcm16.subarray(0, samples.byteLength));
    }
    if (this.#stream) this.#stream.push(samples);
    else this.#early.push(samples);
  }

  /** input_audio_buffer.clear: the detector forgets the audio so far. */
  reset(): void {
    this.host.dropSpeculation();
    this.#stream?.reset();
    this.#early = [];
    this.#turnItemId = null;
  }

  /** A turn event of the VAD: announce it; a finished turn is committed and, with create_response, answered. */
  #onTurn(e: TurnEvent): void {
    const turns = this.#params;
    if (this.#closed || !turns) return;
    const host = this.host;
    try {
      if (e.type === 'silence_started') {
        if (turns.create_response && !host.active()) host.speculate(e.clipEndMs);
        return;
      }
      if (e.type === 'silence_cancelled') return host.dropSpeculation();
      if (e.type === 'speech_started') {
        this.#turnItemId = newId('item');
        host.send({
          type: 'input_audio_buffer.speech_started',
          event_id: newId('event'),
          audio_start_ms: Math.round(e.audioStartMs),
          item_id: this.#turnItemId,
        });
        // Barge-in: the user speaks over the answer, which stops at once (every stage frees the request).
        const active = host.active();
        if (turns.interrupt_response && active && !active.finished) active.cancel('turn_detected');
        return host.speechStarted();
      }
      const itemId = this.#turnItemId ?? newId('item');
      this.#turnItemId = null;
      const turnEndedAtMs = performance.now();
      if (e.type === 'speech_stopped') {
        host.send({
          type: 'input_audio_buffer.speech_stopped',
          event_id: newId('event'),
          audio_end_ms: Math.round(e.audioEndMs),
          item_id: itemId,
        });
      } else {
        host.dropSpeculation(); // none is started outside a turn; an idle turn commits all the audio
        host.send({
          type: 'input_audio_buffer.timeout_triggered',
          event_id: newId('event'),
          audio_start_ms: Math.round(host.bufferStartMs()),
          audio_end_ms: Math.round(host.audioMs()),
          item_id: itemId,
        });
      }
      if (!host.hasInputAudio()) return host.dropSpeculation();
      host.commit(itemId, e.type === 'speech_stopped' ? e.clipEndMs : undefined);
      if (turns.create_response && !host.active()) host.respond(turnEndedAtMs);
      else host.dropSpeculation();
    } catch (err) {
      host.fail(err);
    }
  }

  close(): void {
    this.host.dropSpeculation();
    this.#closed = true;
    this.#stream?.close();
    this.#stream = null;
    this.#early = [];
  }
}

/**
 * The text of an assistant item that was heard up to `endMs` of its audio (conversation.item.truncate). With the
 * Talker's frames per token known, a token's audio is exactly framesPerToken frames, so the tokens voiced are those
 * whose audio began before endMs; otherwise the played share of the audio is mapped onto the tokens
 * proportionally. Pieces are whole (a detokenized piece is never split mid-character).
 */
export function voicedText(spoken: SpokenText, endMs: number, msPerToken: number | null): string {
  const totalTokens = spoken.pieces.reduce((n, p) => n + p.tokens, 0);
  const voiced =
    msPerToken !== null && msPerToken > 0
      ? Math.ceil(endMs / msPerToken)
      : endMs >= spoken.audioMs
        ? totalTokens
        : Math.ceil((totalTokens * endMs) / Math.max(1, spoken.audioMs));
  let text = '';
  let tokens = 0;
  for (const p of spoken.pieces) {
    if (tokens >= voiced) break;
    text += p.text;
    tokens += p.tokens;
  }
  return text;
}
