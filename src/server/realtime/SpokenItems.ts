/**
 * What a session's assistant audio items said, for conversation.item.truncate: the text pieces with their token
 * counts and the audio sent, per item; and the truncations of the response still running, applied when it
 * finishes (its finish would otherwise record the whole answer).
 */
import { ErrorCodes } from '../../common/errors.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import { ClientInputError } from '../validate.ts';
import type { SpokenText } from './ResponseStream.ts';
import { voicedText } from './VoiceTurns.ts';

export class SpokenItems {
  readonly #spoken = new Map<string, SpokenText>();
  readonly #pending = new Map<string, string>();

  /** A response finished: the text its item keeps (a truncation made while it ran wins over the whole answer). */
  finished(itemId: string, text: string, spoken: SpokenText | null): string {
    const truncated = this.#pending.get(itemId);
    this.#pending.delete(itemId);
    if (truncated !== undefined) return truncated;
    if (spoken) this.#spoken.set(itemId, spoken);
    return text;
  }

  /** The item left the conversation (conversation.item.delete): nothing of it is kept. */
  forget(itemId: string): void {
    this.#spoken.delete(itemId);
    this.#pending.delete(itemId);
  }

  /**
   * The text of `itemId` once cut to `audioEndMs` of played audio; `live` is what the response still running for
   * the item has said (then the cut waits for its finish). Throws ClientInputError naming the field at fault.
   */
  truncate(
    e: { item_id: string; content_index: number; audio_end_ms: number },
    live: SpokenText | null,
    facts: AudioOutputFacts | null,
  ): string {
    if (e.content_index !== 0)
      throw new ClientInputError('content_index must be 0: an assistant item has one audio part', 'content_index');
    const spoken = this.checkPlayed(e.item_id, e.audio_end_ms, live, 'audio_end_ms');
    const msPerToken = facts?.framesPerToken
      ? (1000 * facts.framesPerToken * facts.samplesPerFrame) / facts.sampleRateHz
      : null;
    const text = voicedText(spoken, e.audio_end_ms, msPerToken);
    this.#spoken.set(e.item_id, { pieces: [{ text, tokens: 0 }], audioMs: e.audio_end_ms });
    if (live) this.#pending.set(e.item_id, text);
    return text;
  }

  /**
   * What `itemId` said, when `playedMs` of its audio can have been played (truncate, output_audio.playback_ack);
   * `live` as for truncate. Throws ClientInputError naming `param` when it cannot.
   */
  checkPlayed(itemId: string, playedMs: number, live: SpokenText | null, param = 'played_ms'): SpokenText {
    const spoken = live ?? this.#spoken.get(itemId);
    if (!spoken)
      throw new ClientInputError(
        `no assistant audio item ${itemId} in this conversation`,
        'item_id',
        ErrorCodes.NOT_FOUND,
      );
    if (playedMs > Math.ceil(spoken.audioMs))
      throw new ClientInputError(
        `${param} ${playedMs} is past the end of the item's audio (${Math.floor(spoken.audioMs)} ms)`,
        param,
      );
    return spoken;
  }

  /** Ms of audio a finished item said (after any truncation); null when it is not an audio item held here. */
  audioMs(itemId: string): number | null {
    return this.#spoken.get(itemId)?.audioMs ?? null;
  }
}
