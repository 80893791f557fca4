/**
 * Talker -> Code2Wav chunking: frames accumulate to an initial chunk (IC), then chunks that double up to
 * codecChunkFrames, each sent with up to codecLeftContextFrames of already-sent frames as left context so Code2Wav
 * (stateless per chunk) reproduces the offline decode. Pure functions: the talker2code2wav processor holds the state.
 */
import type { ChunkPolicy } from '../common/graph.ts';

/**
 * The IC ladder: the smallest first chunk the vocoder can keep fed at a given load. Halved from 4/8/12 once later
 * chunks grew from the first (nextChunkTarget): a chunk made while the audio before it plays no longer needs a long
 * first chunk to stay ahead. Paired runs: c=1 TTFP p50 39.0 -> 30.9 ms, c=10 mean 318 -> 247 ms, no underruns at
 * c=10 or c=16 (bench/README.md, "Smaller first chunks").
 */
const IC_BY_LOAD: readonly { maxActive: number; frames: number }[] = [
  { maxActive: 2, frames: 2 }, // 160 ms of audio: frame 0 comes out of the Talker prefill, frame 1 one step later
  { maxActive: 8, frames: 4 },
  { maxActive: 16, frames: 8 },
];

/**
 * Positions a prefill must have left before it is split in two (firstPrefillPiece). A second step costs the Thinker
 * ~1.5-2 ms more on tiny-omni (its q4 weights unpacked again, the step's fixed costs); the Talker's head start is the
 * time it takes on the first piece's rows, which below this many positions no longer pays for it.
 */
export const FIRST_PREFILL_SPLIT_MIN = 64;

/**
 * The positions of a request's first prefill step when its prefill of `pending` positions goes in two
 * (chunk_policy.first_prefill_split: the first step's `share`), or null for one step. At light load (a first-packet
 * hold) the Thinker's prompt rows go to the Talker as they are computed, so the Talker prefills the first step's rows
 * while the Thinker computes the rest: the two prefills overlap on the two cores instead of following each other.
 * A first step under half the prompt: the Talker's part of it must end before the Thinker's second step does, or the
 * rows of that step wait for it (c=1, 119 positions: 60 / 59 made the hop 1.27 ms against 0.42, 50 / 69 did not).
 */
export function firstPrefillPiece(share: number | null, pending: number): number | null {
  if (share === null || pending < FIRST_PREFILL_SPLIT_MIN) return null;
  return Math.min(pending - 1, Math.max(1, Math.round(share * pending)));
}

/**
 * Chooses the initial chunk: a per-request override wins, then a configured value, else (dynamic) from the number
 * of requests the Talker is running now. Under load, larger first chunks mean fewer Code2Wav launches, which keeps
 * later chunks arriving ahead of playback (no underruns) at a small cost in TTFP.
 */
export function initialChunkFrames(policy: ChunkPolicy, activeRequests: number, override?: number): number {
  if (override !== undefined) return clamp(override, policy.codecChunkFrames);
  if (policy.initialCodecChunkFrames !== null) return clamp(policy.initialCodecChunkFrames, policy.codecChunkFrames);
  if (!policy.dynamicInitialChunk) return policy.codecChunkFrames;
  const step = IC_BY_LOAD.find((s) => activeRequests <= s.maxActive);
  return clamp(step ? step.frames : policy.codecChunkFrames, policy.codecChunkFrames);
}

/**
 * The first chunk for a TTFP target: the largest one the Talker can still make in time (fewer, larger chunks keep
 * the vocoder ahead of playback later), given the time left (`budgetMs`: target deadline minus now minus the
 * measured downstream time), the prompt prefill that yields frame 0 and one decode step per further frame, both
 * measured under the current load. `met: false` when even one frame is too late: the target cannot be met.
 */
export function initialChunkForTarget(
  policy: ChunkPolicy,
  budgetMs: number,
  prefillMs: number,
  frameMs: number,
): { frames: number; met: boolean } {
  const spare = budgetMs - prefillMs;
  if (spare < 0) return { frames: 1, met: false };
  return { frames: clamp(1 + spare / Math.max(frameMs, 1e-3), policy.codecChunkFrames), met: true };
}

/** Live requests up to which the Thinker holds a request for its first audio (the ladder's first rung). */
const HOLD_MAX_LIVE = IC_BY_LOAD[0].maxActive;

/**
 * Requests a stage holds up to which it counts as lightly loaded (the ladder's first rung, as the first-packet hold):
 * there its cores idle between hand-offs, and a woken stage is moved off its waker's core (src/worker/stageMain.ts).
 */
export const LIGHT_LOAD_MAX_LIVE = HOLD_MAX_LIVE;

/**
 * First-packet hold: the Thinker tokens a request gets before the Thinker waits for its first audio, or undefined
 * for no hold. Exactly the rows the first chunk the ladder (or the request's override) gives at this load needs: at
 * light load the Thinker's decode steps and the text deltas they send to main are what the Talker's prefill shares
 * the two cores with (c=1 traces: Talker prefill 9.8 ms beside them, 5.9 with the hold). One token more, so that the
 * Talker could step on while the release travels back, put a decode step and a text delta (main woken at nice 0)
 * beside the prefill again; without it the first packet came out earlier in 4 of 4 alternated pairs (TTFP mean 128 /
 * 211, 99 / 172, 122 / 167, 138 / 148 ms, the Talker's model 35-46 ms against 45-65, under load 23-32; bench/NOTES.md)
 * and the answer ended no later. Under a burst the hold only idles the Thinker, so it is off there.
 * The Talker caps its first chunk at what the held rows make (firstChunkCap): it never waits on a held Thinker.
 */
export function firstPacketHoldTokens(
  policy: ChunkPolicy,
  liveRequests: number,
  framesPerToken: number,
  override?: number,
): number | undefined {
  if (!policy.firstPacketHold || liveRequests > HOLD_MAX_LIVE) return undefined;
  // Frame k >= 1 is fed the row of token floor(k / framesPerToken): frames [0, ic) need tokens [0, ceil(ic / fpt)).
  return Math.ceil(initialChunkFrames(policy, liveRequests, override) / framesPerToken);
}

/** The most frames a first chunk may take when the Thinker holds after `holdTokens` tokens. */
export function firstChunkCap(holdTokens: number, framesPerToken: number): number {
  // Frame 0 comes from the prefill (token 0's row), frame k >= 1 from token floor(k / framesPerToken)'s row.
  return holdTokens * framesPerToken;
}

function clamp(frames: number, max: number): number {
  return Math.max(1, Math.min(Math.floor(frames), max));
}

export interface CodecChunk {
  /** First frame index included (left context starts here). */
  readonly start: number;
  /** Frames [start, start + contextFrames) are context only. */
  readonly contextFrames: number;
  /** One past the last frame included. */
  readonly end: number;
}

/** Frames the next chunk waits for (the initial chunk, then each at most as long as all audio already sent). */
export function nextChunkTarget(policy: ChunkPolicy, initialFrames: number, numSent: number): number {
  // After the initial chunk, each chunk is at most as long as all the audio already sent (4, 4, 8, 16, 25, 25...
  // for IC 4): it can be made while the audio before it plays, so a small IC does not turn into an underrun when
  // the next chunk jumps straight to codecChunkFrames (measured: every c=10 underrun was at the second chunk).
  return numSent === 0 ? initialFrames : Math.min(policy.codecChunkFrames, numSent);
}

/**
 * The next chunk to send, given frames produced so far and frames already sent; null when not enough have
 * accumulated. `final` flushes whatever remains (possibly nothing: the caller still sends an empty final chunk);
 * `early` sends what is pending now, short of the chunk's size (a first chunk that would miss its TTFP target).
 */
export function nextCodecChunk(
  policy: ChunkPolicy,
  initialFrames: number,
  numProduced: number,
  numSent: number,
  final: boolean,
  early = false,
): CodecChunk | null {
  const target = nextChunkTarget(policy, initialFrames, numSent);
  const pending = numProduced - numSent;
  if (pending <= 0 || (!final && !early && pending < target)) return null;
  const take = final ? pending : Math.min(pending, target);
  const contextFrames = Math.min(policy.codecLeftContextFrames, numSent);
  return { start: numSent - contextFrames, contextFrames, end: numSent + take };
}
