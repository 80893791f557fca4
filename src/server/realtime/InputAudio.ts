/**
 * A Realtime session's input audio buffer: the appended pcm16 bytes, contiguous, so that the turn so far (voice
 * prefill every 640 ms, a held answer, the commit) is a view and never a copy of everything appended.
 *
 * What must stay true: a view handed out is never written again. Appends only write past every view's end (views
 * cover bytes already appended); growing moves the bytes to a new store and leaves the old one to its views; and
 * clear() starts a new store instead of rewinding the old one.
 */

const INITIAL_BYTES = 48_000; // 1 s of 24 kHz pcm16

export class InputAudio {
  #store = Buffer.allocUnsafe(INITIAL_BYTES);
  #length = 0;

  get bytes(): number {
    return this.#length;
  }

  append(audio: Uint8Array): void {
    const needed = this.#length + audio.length;
    if (needed > this.#store.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, 2 * this.#store.length));
      this.#store.copy(grown, 0, 0, this.#length);
      this.#store = grown;
    }
    this.#store.set(audio, this.#length);
    this.#length = needed;
  }

  /** The first `bytes` appended since the last clear (a view: see the header). */
  view(bytes = this.#length): Buffer {
    return this.#store.subarray(0, Math.min(bytes, this.#length));
  }

  clear(): void {
    if (this.#length === 0) return;
    this.#store = Buffer.allocUnsafe(INITIAL_BYTES);
    this.#length = 0;
  }
}
