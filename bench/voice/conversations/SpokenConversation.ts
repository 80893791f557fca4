/**
 * One spoken conversation of `chorus bench --voice --turns`, in the voice bench's client process: a Realtime session
 * with server VAD that answers each turn by itself (create_response), in which the user speaks one sentence a turn,
 * each once the previous answer's response.done has arrived, so every answer sees the whole conversation before it.
 * A turn streams what a microphone records, as a single voice turn does (turns.ts: speak, and which answer is the
 * turn's). Its clock starts at the send of the chunk that holds the last speech sample.
 */
import type { RealtimeSession } from '../../ttfp/clients/RealtimeSession.ts';
import type { TurnSettings, TurnSpec, TurnTrace } from '../protocol.ts';
import { msOf, SPEECH_RATE_HZ } from '../speech.ts';
import { openTurnSession, speak, speechOf, TurnRecord, withLead } from '../turns.ts';

export class SpokenConversation {
  /** Samples appended so far: the session's audio timeline, on which the VAD's audio_end_ms is counted. */
  #sentSamples = 0;

  private constructor(
    private readonly session: RealtimeSession,
    private readonly settings: TurnSettings,
  ) {}

  /** Connects and turns server VAD on (answers of outputLen tokens with ignore_eos), before the first turn. */
  static async open(s: TurnSettings): Promise<SpokenConversation> {
    return new SpokenConversation(await openTurnSession(s, 'voice', { createResponse: true }), s);
  }

  /**
   * Speaks turn `t` and waits for its answer's response.done (or a failure, or timeoutMs past the end of speech).
   * Never rejects: a failed turn is a trace with ok false, and the conversation goes on with the next turn.
   */
  async turn(t: TurnSpec): Promise<TurnTrace> {
    let speech: Int16Array;
    try {
      if (!this.session.open) throw new Error('the server closed the realtime socket');
      speech = speechOf(t.wavFile);
      // Each turn its own seed, as in the typed conversations; set before the speech, so a held answer has it.
      await this.session.update({ seed: t.seed });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      return { kind: 'voice', startMs: performance.now(), events: [], ok: false, error };
    }
    const spoken = withLead(speech, t.noiseSeed);
    const speechEndAudioMs = ((this.#sentSamples + spoken.length) * 1000) / SPEECH_RATE_HZ;
    const turn = new TurnRecord();
    this.#sentSamples += await speak(this.session, turn, spoken, t.noiseSeed + 1, this.settings.timeoutMs);
    return turn.trace('voice', { speechEndAudioMs, speechMs: msOf(speech) });
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
