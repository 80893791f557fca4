/**
 * Builds Code2Wav's input from Talker frames: frames accumulate to the initial chunk, then codecChunkFrames per
 * chunk, each with up to codecLeftContextFrames of already-sent frames as left context (for a stateless vocoder,
 * context >= its receptive field makes the streamed audio equal the offline decode; a stateful one skips the
 * context, its state already holds it). With async_chunk off, everything goes in the final chunk.
 */
import type { ChunkPolicy } from '../../src/common/graph.ts';
import { nextChunkTarget, nextCodecChunk } from '../../src/sched/chunkPolicy.ts';

export interface CodecChunkOut {
  /** numCodebooks x numFrames, layout [Q][T] (Code2Wav's [B, Q, T] input without the batch). */
  readonly codes: Int32Array;
  readonly numFrames: number;
  readonly contextFrames: number;
}

export class Talker2Code2Wav {
  private frames: Int32Array[] = [];
  private numSent = 0;

  constructor(
    private readonly policy: ChunkPolicy,
    private readonly numCodebooks: number,
    private readonly initialFrames: number,
    private readonly asyncChunk: boolean,
  ) {}

  get numFrames(): number {
    return this.frames.length;
  }

  /** Frames already sent to Code2Wav (the audio the listener has been given, in frames). */
  get framesSent(): number {
    return this.numSent;
  }

  /** Frames still to make before the next chunk goes (0: it can go now). */
  get framesUntilNextChunk(): number {
    const target = nextChunkTarget(this.policy, this.initialFrames, this.numSent);
    return Math.max(0, target - (this.frames.length - this.numSent));
  }

  push(frame: Int32Array): void {
    this.frames.push(frame);
  }

  /**
   * The next chunk to send, or null. With `final`, whatever remains (null when nothing does); with `early`, what is
   * pending now even if short of the chunk's size.
   */
  take(final: boolean, early = false): CodecChunkOut | null {
    if (!final && !this.asyncChunk) return null;
    const c = nextCodecChunk(this.policy, this.initialFrames, this.frames.length, this.numSent, final, early);
    if (!c) return null;
    const numFrames = c.end - c.start;
    const codes = new Int32Array(this.numCodebooks * numFrames);
    for (let t = 0; t < numFrames; t++) {
      const frame = this.frames[c.start + t];
      for (let q = 0; q < this.numCodebooks; q++) codes[q * numFrames + t] = frame[q];
    }
    this.numSent = c.end;
    // Frames before the next chunk's context window are never needed again.
    const keepFrom = Math.max(0, this.numSent - this.policy.codecLeftContextFrames);
    if (keepFrom > 0) this.dropBefore(keepFrom);
    return { codes, numFrames, contextFrames: c.contextFrames };
  }

  private dropped = 0;

  private dropBefore(absoluteFrame: number): void {
    // Indices stay absolute for nextCodecChunk: replace dropped frames with an empty marker instead of shifting.
    for (let i = this.dropped; i < absoluteFrame; i++) this.frames[i] = EMPTY;
    this.dropped = Math.max(this.dropped, absoluteFrame);
  }
}

const EMPTY = new Int32Array(0);
