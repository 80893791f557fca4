/**
 * Main's side of the first-packet hold (src/sched/chunkPolicy.ts firstPacketHoldTokens): which live requests have
 * their Thinker holding for the first audio, and ending those holds. A hold ends at the request's first audio, or
 * for every held request as soon as a request is admitted past the hold's light-load rung: a held Thinker would
 * otherwise resume behind the newcomers' prefills while its listener has only the first chunk to play
 * (configs/omni-bench.yaml, a burst of 48 right after a lone request: a 1.4 s stall).
 */
import type { ChunkPolicy } from '../common/graph.ts';
import { firstPacketHoldTokens } from '../sched/chunkPolicy.ts';

export class FirstPacketHolds {
  /** requestId -> what tells its Thinker to go on. */
  private readonly held = new Map<string, () => void>();

  /**
   * The hold of a request being admitted (tokens its Thinker writes first), or undefined for none (a request
   * without audio out never has one); `release` is called once when the hold ends. Any request admitted past the
   * rung, with audio or not, ends every hold.
   */
  admit(
    requestId: string,
    a: {
      policy: ChunkPolicy;
      liveRequests: number;
      framesPerToken: number;
      audio: boolean;
      initialCodecChunkFrames?: number;
    },
    release: () => void,
  ): number | undefined {
    const tokens = firstPacketHoldTokens(a.policy, a.liveRequests, a.framesPerToken, a.initialCodecChunkFrames);
    if (tokens === undefined) for (const id of [...this.held.keys()]) this.release(id);
    if (tokens === undefined || !a.audio) return undefined;
    this.held.set(requestId, release);
    return tokens;
  }

  /** The request's first audio is in (or its audio ended without any): its Thinker goes on. */
  release(requestId: string): void {
    const release = this.held.get(requestId);
    this.held.delete(requestId);
    release?.();
  }

  /** The request ended: its stages dropped it, nothing to tell. */
  forget(requestId: string): void {
    this.held.delete(requestId);
  }

  get size(): number {
    return this.held.size;
  }
}
