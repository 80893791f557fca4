/**
 * Clips main has decoded, kept for the next question about the same clip (`encoder.video.decoded_cache_bytes`).
 *
 * A second question about a clip finds its rows in the encoders' caches and its positions in the Thinker's prefix
 * cache, so what was left of its first packet was main decoding the clip again: ~60-90 ms of a child ffmpeg on this
 * machine, most of the second question's time to first token (bench/NOTES.md, "the second question's decode"). A
 * decode is a function of the clip's bytes, its sampling, the frame grid and the decoder's limits, so its result is
 * kept under a key of those (the part's sourceKey plus the track and the limits) in an LRU bounded by the frames'
 * bytes. The parts are never written to downstream (the rings copy them), so one part may serve many requests.
 */
import type { PartOf } from '../modalities/ModalityDef.ts';

type VideoPart = PartOf<'video'>;

/** The bytes a decoded part holds (its frames and its track). */
export function decodedBytes(part: VideoPart): number {
  return part.data.byteLength + (part.audio?.byteLength ?? 0);
}

export class DecodedClips {
  /** Insertion order is recency: a hit moves its entry to the end. */
  private readonly entries = new Map<string, VideoPart>();
  private held = 0;
  private hitCount = 0;
  private missCount = 0;

  /** `looked`: told of every lookup, found or not (/metrics). */
  constructor(
    private budgetBytes: number,
    private readonly looked: (found: boolean) => void = () => {},
  ) {}

  /** The part decoded under `key`, or undefined (counted either way). */
  get(key: string): VideoPart | undefined {
    const part = this.entries.get(key);
    this.looked(part !== undefined);
    if (part === undefined) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    this.entries.delete(key);
    this.entries.set(key, part);
    return part;
  }

  /** Keeps `part` under `key`, dropping the least recently used beyond the budget; a part over it is not kept. */
  set(key: string, part: VideoPart): void {
    const bytes = decodedBytes(part);
    if (bytes > this.budgetBytes) return;
    this.drop(key);
    this.entries.set(key, part);
    this.held += bytes;
    this.evictTo(this.budgetBytes);
  }

  /** A new budget (a reloaded config): entries beyond it are dropped now. */
  resize(budgetBytes: number): void {
    this.budgetBytes = budgetBytes;
    this.evictTo(budgetBytes);
  }

  get stats(): {
    readonly entries: number;
    readonly heldBytes: number;
    readonly hits: number;
    readonly misses: number;
  } {
    return { entries: this.entries.size, heldBytes: this.held, hits: this.hitCount, misses: this.missCount };
  }

  private evictTo(budget: number): void {
    for (const key of this.entries.keys()) {
      if (this.held <= budget) break;
      this.drop(key);
    }
  }

  private drop(key: string): void {
    const old = this.entries.get(key);
    if (old === undefined) return;
    this.entries.delete(key);
    this.held -= decodedBytes(old);
  }
}
