/** planEncoderStep: same-modality batches, flushed when full or timed out, within a per-step embedding budget. */
import { describe, expect, it } from 'vitest';
import { planEncoderStep, type EncodeJob, type EncoderBudgetPolicy } from '../../stages/encoder/encoderBudget.ts';
import type { Modality } from '../../src/media/types.ts';

const policy: EncoderBudgetPolicy = { budgetEmbeddings: 1000, maxBatchSize: 4, batchTimeoutMs: 5 };

function job(id: string, modality: Modality, numEmbeddings: number, enqueuedAtMs = 0): EncodeJob {
  return { id, modality, numEmbeddings, enqueuedAtMs };
}

const ids = (batches: EncodeJob[][]) => batches.map((b) => b.map((j) => j.id));

describe('planEncoderStep', () => {
  it('holds a partial batch until its timeout and says when to wake', () => {
    const queue = [job('i1', 'image', 64, 100), job('i2', 'image', 64, 102)];
    const early = planEncoderStep(queue, policy, 103);
    expect(early.batches).toEqual([]);
    expect(early.nextFlushAtMs).toBe(105);
    const due = planEncoderStep(queue, policy, 105);
    expect(ids(due.batches)).toEqual([['i1', 'i2']]);
    expect(due.embeddingsStarted).toBe(128);
    expect(due.nextFlushAtMs).toBeNull();
  });

  it('starts a full batch at once, never mixes modalities, and lets a trailing partial batch wait', () => {
    const queue = [job('a1', 'audio', 25, 0), ...[1, 2, 3, 4, 5].map((i) => job(`i${i}`, 'image', 64, i))];
    const plan = planEncoderStep(queue, policy, 3);
    expect(ids(plan.batches)).toEqual([['i1', 'i2', 'i3', 'i4']]); // audio (1 job) and i5 wait
    expect(plan.nextFlushAtMs).toBe(5); // a1's timeout (0 + 5) comes before i5's (5 + 5)
    const later = planEncoderStep(
      queue.filter((j) => !['i1', 'i2', 'i3', 'i4'].includes(j.id)),
      policy,
      10,
    );
    expect(ids(later.batches)).toEqual([['a1'], ['i5']]); // the oldest modality first
  });

  it('spends at most the budget per step, in FIFO order, cutting a batch short', () => {
    const queue = [
      job('i1', 'image', 400, 0),
      job('i2', 'image', 400, 1),
      job('i3', 'image', 400, 2),
      job('i4', 'image', 10, 3),
    ];
    const plan = planEncoderStep(queue, policy, 100);
    expect(ids(plan.batches)).toEqual([['i1', 'i2']]); // i3 does not fit; i4 would, but must not overtake it
    expect(plan.embeddingsStarted).toBe(800);
  });

  it('lets another modality use what the first left when its next job does not fit', () => {
    const queue = [job('a1', 'audio', 750, 0), job('a2', 'audio', 750, 1), job('i1', 'image', 64, 2)];
    const plan = planEncoderStep(queue, policy, 100);
    expect(ids(plan.batches)).toEqual([['a1'], ['i1']]);
    expect(plan.embeddingsStarted).toBe(814);
  });

  it('starts an item larger than the whole budget alone in an empty step, and only then', () => {
    const big = job('a-long', 'audio', 3000, 0);
    expect(ids(planEncoderStep([big, job('a2', 'audio', 25, 1)], policy, 100).batches)).toEqual([['a-long']]);
    // Behind a job that already spent budget it waits, so it never shares a step.
    expect(ids(planEncoderStep([job('a0', 'audio', 25, -1), big], policy, 100).batches)).toEqual([['a0']]);
  });

  it('rejects nonsense policies', () => {
    expect(() => planEncoderStep([], { ...policy, budgetEmbeddings: 0 }, 0)).toThrow(RangeError);
    expect(() => planEncoderStep([], { ...policy, maxBatchSize: 0 }, 0)).toThrow(RangeError);
  });

  it("caps a run's padded patches (its length x its largest job's): batching never builds a run over them", () => {
    const capped = { ...policy, budgetEmbeddings: 100_000, maxRunCost: 4096 };
    const clip = (id: string, patches: number, at: number) => ({ ...job(id, 'video', patches / 4, at), cost: patches });
    // 1,000 + 1,000 + 1,000 padded to 1,000 each fit 4,096; a fourth (1,500) pads all four to 6,000: it runs next.
    const queue = [clip('v1', 1000, 0), clip('v2', 1000, 1), clip('v3', 1000, 2), clip('v4', 1500, 3)];
    const plan = planEncoderStep(queue, capped, 100);
    expect(ids(plan.batches)).toEqual([['v1', 'v2', 'v3'], ['v4']]); // the rest starts in this step, not after a wait
    for (const b of plan.batches) expect(b.length * Math.max(...b.map((j) => j.cost ?? 0))).toBeLessThanOrEqual(4096);
    // A job over the cap alone still starts, alone (main planned it; the encoder checks its memory).
    expect(ids(planEncoderStep([clip('huge', 5000, 0), clip('v5', 10, 1)], capped, 100).batches)).toEqual([
      ['huge'],
      ['v5'],
    ]);
    // Without a cap the same queue is one batch.
    expect(ids(planEncoderStep(queue, { ...capped, maxRunCost: undefined }, 100).batches)).toEqual([
      ['v1', 'v2', 'v3', 'v4'],
    ]);
  });
});
