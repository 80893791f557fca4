/**
 * The encoder's compute budget per scheduling step (vLLM's encoder_compute_budget), with batching: picks
 * which queued encode jobs start now. Pure: the clock is an argument (nowMs), so tests need no timers and
 * the caller owns the one timer (it wakes at nextFlushAtMs).
 *
 * Rules, per modality (a batch never mixes modalities: one encoder runs it):
 * 1. A batch is the next maxBatchSize jobs of that modality, oldest first. It starts when it is full, or
 *    when its oldest job has waited batchTimeoutMs (a lone request must not wait for company forever).
 * 2. Each started job spends its embedding count from the step's budget. Jobs keep FIFO order: when the
 *    next job does not fit, that modality stops for this step (a stream of small jobs must not starve a
 *    large one). A batch cut short by the budget starts with what fits.
 * 3. A job larger than the whole budget starts alone in a step that has started nothing else (vLLM floors
 *    the budget at the largest item), or it could never run.
 * 4. A batch's padded cost (its length x its costliest job's `cost`: items are padded to the longest) stays within
 *    maxRunCost: a vision run's patches (encodeCap.ts), so batching never builds a run over the encoder's patches per
 *    encode or its memory cap. A job over it alone still starts alone (main planned it; the core checks its memory).
 * Modalities are served in the order of their oldest waiting job.
 */
import type { Modality } from '../../src/media/types.ts';

export interface EncodeJob {
  readonly id: string;
  readonly modality: Modality;
  readonly numEmbeddings: number;
  readonly enqueuedAtMs: number;
  /** What the job costs one run, padded (a vision item's patches); absent: 0. */
  readonly cost?: number;
}

export interface EncoderBudgetPolicy {
  /** Embeddings that may start encoding in one step. */
  readonly budgetEmbeddings: number;
  readonly maxBatchSize: number;
  /** How long a partial batch waits for more jobs of its modality. */
  readonly batchTimeoutMs: number;
  /** A run's padded cost at most (rule 4); absent: no cap. */
  readonly maxRunCost?: number;
}

export interface EncoderStepPlan<J extends EncodeJob = EncodeJob> {
  /** Batches to start now, each of one modality, jobs in queue order. */
  readonly batches: J[][];
  readonly embeddingsStarted: number;
  /** When a waiting partial batch times out (the caller's next wake-up); null when nothing is waiting on a timeout. */
  readonly nextFlushAtMs: number | null;
}

function checkPolicy(policy: EncoderBudgetPolicy): void {
  const { budgetEmbeddings, maxBatchSize, batchTimeoutMs } = policy;
  if (!(budgetEmbeddings > 0) || !(maxBatchSize >= 1) || !Number.isInteger(maxBatchSize) || !(batchTimeoutMs >= 0)) {
    throw new RangeError(
      `encoder budget policy needs budgetEmbeddings > 0, an integer maxBatchSize >= 1 and batchTimeoutMs >= 0, got ` +
        `${JSON.stringify(policy)}`,
    );
  }
}

export function planEncoderStep<J extends EncodeJob>(
  queue: readonly J[],
  policy: EncoderBudgetPolicy,
  nowMs: number,
): EncoderStepPlan<J> {
  checkPolicy(policy);
  const byModality = new Map<Modality, J[]>();
  for (const job of [...queue].sort((a, b) => a.enqueuedAtMs - b.enqueuedAtMs)) {
    const list = byModality.get(job.modality);
    if (list) list.push(job);
    else byModality.set(job.modality, [job]);
  }
  const batches: J[][] = [];
  let remaining = policy.budgetEmbeddings;
  let started = 0;
  let nextFlushAtMs: number | null = null;
  // Map order = order of each modality's oldest job (the queue was sorted by age above).
  for (const jobs of byModality.values()) {
    let next = 0;
    let cutByCost = false; // jobs left behind by rule 4 were due to start: they need not wait for company
    while (next < jobs.length) {
      const candidate = jobs.slice(next, next + policy.maxBatchSize);
      const flushAt = candidate[0].enqueuedAtMs + policy.batchTimeoutMs;
      if (!cutByCost && candidate.length < policy.maxBatchSize && nowMs < flushAt) {
        nextFlushAtMs = nextFlushAtMs === null ? flushAt : Math.min(nextFlushAtMs, flushAt);
        break; // rule 1: a partial batch waits for company until its timeout
      }
      const batch: J[] = [];
      let costliest = 0;
      cutByCost = false;
      for (const job of candidate) {
        costliest = Math.max(costliest, job.cost ?? 0);
        if (batch.length > 0 && (batch.length + 1) * costliest > (policy.maxRunCost ?? Infinity)) {
          cutByCost = true; // rule 4: the rest starts in the next run (this step, when the budget allows)
          break;
        }
        if (job.numEmbeddings <= remaining) {
          remaining -= job.numEmbeddings;
        } else if (started === 0) {
          remaining = 0; // rule 3: oversized, alone in an empty step
        } else {
          break; // rule 2: FIFO, the rest waits for the next step
        }
        batch.push(job);
        started += job.numEmbeddings;
      }
      if (batch.length > 0) batches.push(batch);
      next += batch.length;
      if (batch.length < candidate.length && !cutByCost) break;
    }
  }
  return { batches, embeddingsStarted: started, nextFlushAtMs };
}
