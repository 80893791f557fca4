/**
 * What one vision encoder run may cost, in patches: the stage's `encoder.video.max_patches_per_encode` and its
 * `encoder.max_encode_bytes` (the run's working memory, estimated from the model's size before the run:
 * src/media/video/encodeMemory.ts). A run of several items pads each to the longest, so a batch costs its length
 * times its largest item's patches (the memory of B padded items of N patches is B times one item's, never more
 * than one item of B x N patches: the scores grow with N squared); the budget planner caps batches by that, pricing
 * a clip as one sequence, an upper bound (encoderBudget.ts). The core checks each run against the memory cap before
 * it starts (EncoderCore.ts) as the runner feeds it: every clip cut into its temporal groups, all padded to the
 * longest sequence of the run (the generated encoder, the only one with a size to estimate from).
 *
 * An item over the memory cap alone fails with ENCODE_MEMORY (as when onnxruntime cannot allocate a run's buffers):
 * main then re-encodes the clip with fewer or smaller frames (src/engine/requests/Reencodes.ts).
 */
import { ErrorCodes } from '../../src/common/errors.ts';
import { ChorusError } from '../../src/common/errors.ts';
import type { StageSpec } from '../../src/common/graph.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import { encodeWorkingBytes } from '../../src/media/video/encodeMemory.ts';

export interface EncodeCap {
  /** Padded patches of one run at most (Infinity: no cap). */
  readonly maxRunPatches: number;
  /** A run's estimated working memory, bytes, over sequences padded to patchesEach (null: a file model, no size). */
  readonly runBytes: ((sequences: number, patchesEach: number) => number) | null;
  /** encoder.max_encode_bytes (null: none). */
  readonly maxBytes: number | null;
  /** Patches per row (merge x merge): a job's rows times this are its patches. */
  readonly patchesPerRow: number;
}

export function encodeCapOf(spec: StageSpec): EncodeCap | null {
  const settings = spec.encoder;
  if (!settings?.imageGrid) return null; // audio: windows, not one attention over the item
  const model = spec.model;
  const size = model.source === 'generated' && model.kind === 'vision_encoder' ? model.size : null;
  const runBytes = size ? (sequences: number, patches: number) => encodeWorkingBytes(sequences, patches, size) : null;
  const maxBytes = settings.maxEncodeBytes;
  let maxRunPatches = settings.video?.maxPatchesPerEncode ?? Infinity;
  if (runBytes && maxBytes !== null) maxRunPatches = Math.min(maxRunPatches, patchesWithin(maxBytes, runBytes));
  const merge = settings.imageGrid.mergeSize;
  return { maxRunPatches, runBytes, maxBytes, patchesPerRow: merge * merge };
}

/** The most patches one item may have for its estimate to stay within `maxBytes` (at least 1). */
function patchesWithin(maxBytes: number, runBytes: (items: number, patches: number) => number): number {
  let lo = 1;
  let hi = 1 << 24;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (runBytes(1, mid) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The sequences a run of `inputs` attends over, as the runner cuts them: a clip's temporal groups, an image. */
function sequencesOf(inputs: readonly EncoderInput[]): { count: number; longest: number; largestItem: number } {
  let count = 0;
  let longest = 0;
  let largestItem = 0;
  for (const input of inputs) {
    if (input.modality === 'audio') continue; // no vision cap for audio (encodeCapOf)
    const groups = input.modality === 'video' ? input.gridT : 1;
    count += groups;
    longest = Math.max(longest, input.numPatches / groups);
    largestItem = Math.max(largestItem, input.numPatches);
  }
  return { count, longest, largestItem };
}

/** The error an item over the memory cap fails with; null when the run fits (or no cap can be estimated). */
export function overMemoryCap(cap: EncodeCap | null, inputs: readonly EncoderInput[]): ChorusError | null {
  if (!cap?.runBytes || cap.maxBytes === null) return null;
  const { count, longest, largestItem: patchesEach } = sequencesOf(inputs);
  const bytes = cap.runBytes(count, longest);
  if (bytes <= cap.maxBytes) return null;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 1 : 0)} MiB`;
  return new ChorusError(
    ErrorCodes.ENCODE_MEMORY,
    `its encode needs ~${mib(bytes)} of working memory (${patchesEach} patches), over the encoder's ` +
      `encoder.max_encode_bytes (${mib(cap.maxBytes)}): ask a lower fps or max_frames, or raise max_encode_bytes`,
  );
}

/** onnxruntime's own allocation failures (its arena or the process out of memory), as an ENCODE_MEMORY error. */
export function allocationFailure(err: unknown): ChorusError | null {
  const message = err instanceof Error ? err.message : String(err);
  if (!/failed to allocate|bad_alloc|bad allocation|out of memory/i.test(message)) return null;
  return new ChorusError(
    ErrorCodes.ENCODE_MEMORY,
    `its encode ran out of memory (${message}): ask a lower fps or max_frames, or lower ` +
      `encoder.max_encode_bytes so that such runs are refused before they start`,
    { cause: err },
  );
}
