/**
 * Audio encoding by attention window, for an encoder whose rows depend only on the frames of their own window
 * (the generated audio encoder, version 2: stages/encoder/audioEncoderModel.ts). Each item's log-mel is cut
 * into windows of `windowFrames`; a window whose frames were encoded before (the same floats, by hash) takes its
 * rows from a small LRU instead of the encoder, and the rest run as one batch of windows.
 *
 * Why: while a user speaks, the voice path sends the growing turn to the encoder again and again
 * (src/voice/VoicePrefill.ts). Log-mel frames are final once the samples under them have arrived
 * (logMel.ts has no clip-wide clamp), so every window but the last one or two is the same each time and is
 * encoded once; at the end of the turn only the tail is left. Serving a window from here also hands the Thinker
 * the very floats it prefilled earlier, which is what its prefix reuse compares (ThinkerPrefixes). A window is
 * keyed within its request's cache salt (AudioFeatures.cacheSalt): another tenant's same speech is encoded apart.
 */
import { melWindowKey } from '../../src/media/mediaKey.ts';
import { AUDIO_FRAMES_PER_EMBEDDING } from '../../src/media/audio.ts';
import type { AudioFeatures } from '../../src/media/types.ts';

export interface AudioWindowStats {
  /** Windows served from the cache, and windows run through the encoder. */
  readonly windowHits: number;
  readonly windowsEncoded: number;
}

/** Runs the encoder over windows (each <= windowFrames frames); returns each window's rows. */
export type EncodeWindows = (windows: readonly AudioFeatures[]) => Float32Array[];

export class AudioWindows {
  readonly #lru = new Map<string, Float32Array>();
  #bytes = 0;
  #hits = 0;
  #encoded = 0;

  constructor(
    readonly windowFrames: number,
    private readonly encoderId: string,
    /** Rows kept for reuse (a 64 MiB default holds ~40 min of audio at the tiny width). */
    private readonly budgetBytes = 64 << 20,
  ) {
    if (!Number.isInteger(windowFrames) || windowFrames % AUDIO_FRAMES_PER_EMBEDDING !== 0 || windowFrames <= 0)
      throw new RangeError(`windowFrames must be a positive multiple of ${AUDIO_FRAMES_PER_EMBEDDING}`);
  }

  get stats(): AudioWindowStats {
    return { windowHits: this.#hits, windowsEncoded: this.#encoded };
  }

  /** Each item's rows (numEmbeddings * width floats), its windows from the cache or from `run`. */
  encode(items: readonly AudioFeatures[], width: number, run: EncodeWindows): Float32Array[] {
    const plans = items.map((item) => this.#split(item));
    const missing = new Map<string, AudioFeatures>();
    for (const plan of plans)
      for (const w of plan) if (!this.#lru.has(w.key) && !missing.has(w.key)) missing.set(w.key, w.features);
    const fresh = new Map<string, Float32Array>();
    if (missing.size > 0) {
      const rows = run([...missing.values()]);
      [...missing.keys()].forEach((key, i) => fresh.set(key, rows[i]));
      this.#encoded += fresh.size;
    }
    const out = items.map((item, i) => {
      const rows = new Float32Array(item.numEmbeddings * width);
      let at = 0;
      for (const w of plans[i]) {
        let windowRows = fresh.get(w.key);
        if (!windowRows) {
          windowRows = this.#lru.get(w.key)!;
          this.#hits++;
          this.#lru.delete(w.key); // most recently used
          this.#lru.set(w.key, windowRows);
        }
        rows.set(windowRows, at);
        at += windowRows.length;
      }
      if (at !== rows.length) throw new RangeError(`windows gave ${at} floats for an item of ${rows.length}`);
      return rows;
    });
    // Stored after they were read: evicting to make room cannot take a window this call still needs.
    for (const [key, rows] of fresh) this.#put(key, rows);
    return out;
  }

  #split(item: AudioFeatures): { key: string; features: AudioFeatures }[] {
    const out: { key: string; features: AudioFeatures }[] = [];
    const { numMelBins, numFrames, mel } = item;
    for (let start = 0; start < numFrames; start += this.windowFrames) {
      const frames = Math.min(this.windowFrames, numFrames - start);
      const windowMel = new Float32Array(numMelBins * frames);
      for (let m = 0; m < numMelBins; m++)
        windowMel.set(mel.subarray(m * numFrames + start, m * numFrames + start + frames), m * frames);
      out.push({
        key: melWindowKey(windowMel, frames, this.encoderId, item.cacheSalt),
        features: {
          modality: 'audio',
          mel: windowMel,
          numMelBins,
          numFrames: frames,
          numEmbeddings: Math.ceil(frames / AUDIO_FRAMES_PER_EMBEDDING),
        },
      });
    }
    return out;
  }

  #put(key: string, rows: Float32Array): void {
    this.#lru.set(key, rows);
    this.#bytes += rows.byteLength;
    // The oldest go first; the windows of the latest call were used last, so they stay.
    while (this.#bytes > this.budgetBytes && this.#lru.size > 1) {
      const [oldest, old] = this.#lru.entries().next().value!;
      this.#lru.delete(oldest);
      this.#bytes -= old.byteLength;
    }
  }
}
