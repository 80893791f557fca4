/**
 * A cached prefix for the limit of a turn over a long past: the KV a conversation's turn adopts from the prefix
 * cache, built here by running the runners over those positions (untimed) in sequences of their own. A timed packet
 * copies it into its own sequences before its clock starts (runLimit.ts firstPacket), as the prefix cache hands a
 * request its cached blocks (stages/thinker/ThinkerPrefixCache.ts, stages/talker/TalkerPrefixCache.ts): the
 * past is built once per turn, and every repeat computes the same new positions over the same past.
 */
import type { Thinker2Talker } from '../../src/index.ts';
import { ChorusError, concatFloat32, ErrorCodes } from '../../src/basics.ts';
import type { PacketSampling, Runners } from './limitRunners.ts';

export interface CachedPast {
  /** The Thinker's KV of positions [0, thinkerPositions), in a sequence of the past's own. */
  readonly thinkerSeqId: string;
  readonly thinkerPositions: number;
  /** The ids fed at those positions (the repetition penalty's "seen" set goes with the KV, as in the cache). */
  readonly fedTokenIds: readonly number[];
  /** Their input embeddings and accept-layer hidden states (thinkerPositions * hiddenSize each): the Talker's rows. */
  readonly embeds: Float32Array;
  readonly hidden: Float32Array;
  /** The Talker's KV of prompt rows [0, talkerRows); talkerRows <= thinkerPositions (its rows come from those). */
  readonly talkerSeqId: string;
  readonly talkerRows: number;
}

export interface PastOptions {
  /** Names the past's sequences (never a packet's: packets are named `limit-<i>-<j>`). */
  readonly name: string;
  readonly promptIds: readonly number[];
  readonly thinkerPositions: number;
  readonly talkerRows: number;
  /**
   * Positions per forward while building (the stages' max_num_batched_tokens): a past of thousands of positions in
   * one forward would need an attention matrix the runtime never builds.
   */
  readonly thinkerStepTokens: number;
  readonly talkerStepRows: number;
  readonly sampling: PacketSampling;
}

export function buildPast(r: Runners, o: PastOptions): CachedPast {
  if (o.talkerRows > o.thinkerPositions)
    throw new RangeError(
      `a Talker past of ${o.talkerRows} rows needs as many Thinker positions (${o.thinkerPositions})`,
    );
  const thinkerSeqId = `past ${o.name} thinker`; // a space: never a packet's sequence
  const talkerSeqId = `past ${o.name} talker`;
  const embeds: Float32Array[] = [];
  const hidden: Float32Array[] = [];
  try {
    for (let at = 0; at < o.thinkerPositions; at += o.thinkerStepTokens) {
      const n = Math.min(o.thinkerStepTokens, o.thinkerPositions - at);
      const [out] = r.thinker.execute([
        {
          seqId: thinkerSeqId,
          tokenIds: o.promptIds.slice(at, at + n),
          numTokens: n,
          sample: false,
          sampling: o.sampling.thinker,
        },
      ]);
      embeds.push(out.embeds);
      hidden.push(out.hidden);
    }
    const past: CachedPast = {
      thinkerSeqId,
      thinkerPositions: o.thinkerPositions,
      fedTokenIds: o.promptIds.slice(0, o.thinkerPositions),
      embeds: concatFloat32(embeds),
      hidden: concatFloat32(hidden),
      talkerSeqId,
      talkerRows: o.talkerRows,
    };
    const rows = conditionRows(past, r.thinker.hiddenSize, o.talkerRows);
    const dim = r.talker.conditionDim;
    // Prompt rows extend the cache without sampling, as the Talker's prompt positions before its first frame.
    for (let at = 0; at < o.talkerRows; at += o.talkerStepRows) {
      const n = Math.min(o.talkerStepRows, o.talkerRows - at);
      r.talker.execute([
        {
          seqId: talkerSeqId,
          rows: rows.subarray(at * dim, (at + n) * dim),
          numRows: n,
          sampling: o.sampling.talker,
          sample: false,
        },
      ]);
    }
    return past;
  } catch (err) {
    r.thinker.free(thinkerSeqId);
    r.talker.free(talkerSeqId);
    throw err;
  }
}

/** Gives packet sequence `seqId` a copy of the past (KV in both stages, rows into its Thinker2Talker). */
export function adoptPast(r: Runners, past: CachedPast, seqId: string, toTalker: Thinker2Talker): void {
  if (past.thinkerPositions === 0) return;
  r.thinker.copySequence(past.thinkerSeqId, seqId, past.thinkerPositions, past.fedTokenIds);
  toTalker.onStep(0, past.thinkerPositions, past.embeds, past.hidden, null);
  if (past.talkerRows > 0) r.talker.copySequence(past.talkerSeqId, seqId, past.talkerRows);
  // A copy from a sequence the runner does not hold is a silent no-op: the packet would then run over no past and
  // report a limit too low for the turn.
  if (r.thinker.kvBytes(seqId) === 0 || (past.talkerRows > 0 && r.talker.kvBytes(seqId) === 0))
    throw new ChorusError(ErrorCodes.STAGE_FAILED, `the cached past ${past.thinkerSeqId} was not copied into ${seqId}`);
}

export function freePast(r: Runners, past: CachedPast): void {
  r.thinker.free(past.thinkerSeqId);
  r.talker.free(past.talkerSeqId);
}

/** [embed | hidden] of the first `count` positions, row-major: what Thinker2Talker sends for prompt positions. */
function conditionRows(past: CachedPast, hiddenSize: number, count: number): Float32Array {
  const d = hiddenSize;
  const rows = new Float32Array(count * 2 * d);
  for (let pos = 0; pos < count; pos++) {
    rows.set(past.embeds.subarray(pos * d, (pos + 1) * d), pos * 2 * d);
    rows.set(past.hidden.subarray(pos * d, (pos + 1) * d), pos * 2 * d + d);
  }
  return rows;
}
