/**
 * When a Realtime session prefills (VoicePrefill does the prefilling): a spoken turn's audio while it is spoken and
 * nothing answers, and a kept camera frame at once. The prefill opens with turn detection on a pipeline that hears
 * the audio itself, or with the first kept frame, and closes with turn detection off unless frames hold its KV.
 */
import type { GenerateRequest } from '../../common/engine.ts';
import { VoicePrefill } from '../../voice/index.ts';
import type { InputAudio } from './InputAudio.ts';
import type { ResponseContext, SessionResponses } from './SessionResponses.ts';

export interface SessionPrefillParts {
  readonly ctx: Pick<ResponseContext, 'engine' | 'prefills' | 'log'>;
  readonly sessionId: string;
  /** The session's cache salt now: a prefill names its blocks as the answer will. */
  readonly cacheSalt: () => string | undefined;
  readonly inputAudio: InputAudio;
  readonly responses: SessionResponses;
  /** The VAD hears the user speaking (a turn is open). */
  readonly inTurn: () => boolean;
}

export class SessionPrefill {
  readonly #p: SessionPrefillParts;
  /** Null: not opened, or the engine cannot prefill (manual turns cost nothing). */
  #prefill: VoicePrefill | null = null;

  constructor(parts: SessionPrefillParts) {
    this.#p = parts;
  }

  /** The prefill's prefix key, when the session prefills (responses reuse its cached tokens). */
  get key(): string | undefined {
    return this.#prefill?.key;
  }

  /**
   * After a session.update: `turns`, the session prefills its spoken turns (turn detection on, and the pipeline hears
   * the audio: a turn heard as its transcript has nothing to prefill while it is spoken, the text comes at its end).
   * Off, the prefill closes unless `framesHeld` (closing would free the camera frames' prefilled KV).
   */
  configure(turns: boolean, framesHeld: boolean): void {
    if (turns) this.#open();
    else if (!framesHeld) {
      this.#prefill?.close();
      this.#prefill = null;
    }
  }

  /**
   * A camera frame was kept: it is encoded and prefilled now. While the user speaks, the turn's own prefill (every
   * PREFILL_EVERY_MS of speech) reads the conversation with the frame in it: one more prefill would only compete
   * with it and with the answer held at the first silence.
   */
  frameKept(): void {
    if (this.#p.inTurn() && this.#prefill) return;
    const { responses, inTurn } = this.#p;
    this.#open()?.now(
      () => 0,
      () => {
        // The answer running sees the frame's item next turn; a turn begun meanwhile prefills it with its speech.
        if (!responses.idle || inTurn()) return null;
        return responses.turnSoFar();
      },
    );
  }

  /** During a turn with nothing answering, the audio so far is prefilled (VoicePrefill paces it). */
  turnAudio(): void {
    if (this.#prefill && this.#p.inTurn() && this.#p.responses.idle)
      this.#prefill.onAudio(this.#p.inputAudio.ms, () => this.#turnSoFar());
  }

  /** The turn's audio is gone (committed): the next turn starts counting from zero. */
  turnEnded(): void {
    this.#prefill?.turnEnded();
  }

  /** The input audio buffer was cleared: what was prefilled of it is released. */
  release(): void {
    this.#prefill?.release();
  }

  close(): void {
    this.#prefill?.close();
  }

  /** The session's voice prefill, opened on first use; null: the engine has none. */
  #open(): VoicePrefill | null {
    const { ctx, sessionId, cacheSalt } = this.#p;
    return (this.#prefill ??= VoicePrefill.for(ctx.engine, ctx.prefills, `voice-${sessionId}`, ctx.log, cacheSalt));
  }

  /** The messages the answer to the turn being spoken would get if it ended now (VoicePrefill). */
  #turnSoFar(): GenerateRequest['messages'] | null {
    const pending = this.#p.inputAudio.pendingItem();
    return pending && this.#p.responses.turnSoFar(pending);
  }
}
