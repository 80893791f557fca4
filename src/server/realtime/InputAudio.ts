/**
 * A Realtime session's input audio buffer: the appended pcm16 bytes, contiguous, so that the turn so far (voice
 * prefill every 640 ms, a held answer, the commit) is a view and never a copy of everything appended.
 *
 * What must stay true: a view handed out is never written again. Appends only write past every view's end (views
 * cover bytes already appended); growing moves the bytes to a new store and leaves the old one to its views; and
 * clear() starts a new store instead of rewinding the old one.
 */

import type { MediaPart } from '../media/mediaParts.ts';
import { INPUT_AUDIO_RATE_HZ, type StoredItem } from './Conversation.ts';
import { appendGrowing } from '../../common/arrays.ts';

const INITIAL_BYTES = 48_000; // 1 s of 24 kHz pcm16
const BYTES_PER_MS = (INPUT_AUDIO_RATE_HZ * 2) / 1000;

export class InputAudio {
  #store = Buffer.allocUnsafe(INITIAL_BYTES);
  #length = 0;
  /** Audio appended in the session, ms (the VAD's timeline), and where the buffer now starts on it. */
  #appendedMs = 0;
  #startMs = 0;

  get bytes(): number {
    return this.#length;
  }

  /** The buffer's audio, ms. */
  get ms(): number {
    return this.#length / BYTES_PER_MS;
  }

  get appendedMs(): number {
    return this.#appendedMs;
  }

  get startMs(): number {
    return this.#startMs;
  }

  /** Bytes of the buffer up to `endMs` on the session's timeline (whole samples, at most the buffer). */
  bytesUntil(endMs: number): number {
    const samples = Math.round(((endMs - this.#startMs) * INPUT_AUDIO_RATE_HZ) / 1000);
    return Math.max(0, Math.min(this.#length - (this.#length % 2), 2 * samples));
  }

  /** The first `bytes` as pcm16 media (a view). */
  media(bytes = this.#length): MediaPart {
    return { type: 'audio', data: this.view(bytes), format: 'pcm16', sampleRateHz: INPUT_AUDIO_RATE_HZ };
  }

  /** The first `bytes` as the user item a commit would make, for an answer rendered before it (null: not whole
   * samples, or nothing). */
  pendingItem(bytes = this.#length): StoredItem | null {
    if (bytes % 2 !== 0 || bytes === 0) return null;
    return { id: 'pending', role: 'user', parts: [{ type: 'input_audio', text: '', media: this.media(bytes) }] };
  }

  append(audio: Uint8Array): void {
    this.#store = appendGrowing(this.#store, this.#length, audio, (n) => Buffer.allocUnsafe(n));
    this.#length += audio.length;
    this.#appendedMs += audio.length / BYTES_PER_MS;
  }

  /** The first `bytes` appended since the last clear (a view: see the header). */
  view(bytes = this.#length): Buffer {
    return this.#store.subarray(0, Math.min(bytes, this.#length));
  }

  /** Empties the buffer (committed or cleared): it now starts where the audio appended so far ends. */
  clear(): void {
    this.#startMs = this.#appendedMs;
    if (this.#length === 0) return;
    this.#store = Buffer.allocUnsafe(INITIAL_BYTES);
    this.#length = 0;
  }
}
