/**
 * The streaming vocoder's state, per request. A Code2Wav file is stateful when it has inputs `past_state.<name>`
 * with matching outputs `present_state.<name>` (each [batch, ...fixed dims]) and a `num_frames` [batch] int64
 * input (rows are right-padded to one length; each row's present must end at its own last frame). The runner
 * feeds each request's last present back as its next past, so a chunk needs no left context: every frame is
 * decoded once. A request without state yet starts from zeros (the causal convolutions' left padding).
 *
 * Rows are batched per request: past_state.<name> stacks the rows' states in batch order, present_state.<name>
 * is split back the same way.
 */
import * as ort from 'onnxruntime-node';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { signatureError } from '../models/decoderSignature.ts';
import type { ValueMetadata } from '../models/SyncSession.ts';

const PAST = 'past_state.';
const PRESENT = 'present_state.';
const NUM_FRAMES = 'num_frames';

interface StateSlot {
  readonly name: string; // after the prefix
  /** Dims after the batch. */
  readonly dims: readonly number[];
  readonly size: number;
}

export class Code2WavStates {
  private readonly bySeq = new Map<string, Float32Array[]>();
  readonly outputNames: readonly string[];

  private constructor(private readonly slots: readonly StateSlot[]) {
    this.outputNames = slots.map((s) => PRESENT + s.name);
  }

  /** The file's state slots, or null for a stateless file (no past_state.* inputs). */
  static detect(inputs: readonly ValueMetadata[], outputNames: readonly string[], what: string): Code2WavStates | null {
    const pasts = inputs.filter((m) => m.name.startsWith(PAST));
    if (pasts.length === 0) return null;
    const numFrames = inputs.find((m) => m.name === NUM_FRAMES);
    if (!numFrames || numFrames.type !== 'int64' || numFrames.shape.length !== 1)
      throw signatureError(what, `has ${PAST}* inputs but no ${NUM_FRAMES} [batch] (int64): each row's frame count`);
    const slots = pasts
      .map((m): StateSlot => {
        const name = m.name.slice(PAST.length);
        const dims = m.shape.slice(1);
        if (m.type !== 'float32' || m.shape.length < 2 || !dims.every((d) => typeof d === 'number' && d > 0))
          throw signatureError(
            what,
            `input ${m.name} must be float32 [batch, ...fixed dims], got ${m.type} [${m.shape}]`,
          );
        if (!outputNames.includes(PRESENT + name))
          throw signatureError(
            what,
            `has input ${m.name} but no output ${PRESENT}${name} to carry it to the next chunk`,
          );
        const fixed = dims as number[];
        return { name, dims: fixed, size: fixed.reduce((a, b) => a * b, 1) };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    return new Code2WavStates(slots);
  }

  /** Requests holding state. */
  get size(): number {
    return this.bySeq.size;
  }

  has(seqId: string): boolean {
    return this.bySeq.has(seqId);
  }

  /** Bytes of one request's state. */
  get bytesPerSeq(): number {
    return this.slots.reduce((sum, s) => sum + s.size * 4, 0);
  }

  /** num_frames and every past_state for rows seqIds (null: a probe row, zero state, nothing kept). */
  feeds(seqIds: readonly (string | null)[], numFrames: readonly number[]): Record<string, ort.Tensor> {
    const batch = seqIds.length;
    const feeds: Record<string, ort.Tensor> = {
      [NUM_FRAMES]: new ort.Tensor('int64', BigInt64Array.from(numFrames, BigInt), [batch]),
    };
    this.slots.forEach((slot, i) => {
      const data = new Float32Array(batch * slot.size); // zeros: a request's first chunk
      seqIds.forEach((id, b) => {
        const state = id === null ? undefined : this.bySeq.get(id);
        if (state) data.set(state[i], b * slot.size);
      });
      feeds[PAST + slot.name] = new ort.Tensor('float32', data, [batch, ...slot.dims]);
    });
    return feeds;
  }

  /** Keeps each row's present as its request's next past. */
  keep(seqIds: readonly (string | null)[], outputs: Readonly<Record<string, ort.Tensor>>): void {
    const presents = this.slots.map((slot) => {
      const data = outputs[PRESENT + slot.name]?.data;
      if (!(data instanceof Float32Array) || data.length !== seqIds.length * slot.size)
        throw new ChorusError(
          ErrorCodes.INTERNAL,
          `code2wav returned ${PRESENT}${slot.name} of ${data?.length ?? 0} values for ${seqIds.length} rows ` +
            `of ${slot.size}`,
        );
      return data;
    });
    seqIds.forEach((id, b) => {
      if (id === null) return;
      this.bySeq.set(
        id,
        presents.map((data, i) => data.slice(b * this.slots[i].size, (b + 1) * this.slots[i].size)),
      );
    });
  }

  free(seqId: string): void {
    this.bySeq.delete(seqId);
  }
}
