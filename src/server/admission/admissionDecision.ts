/**
 * Admission on latency, the policy half: given the engine's estimate of when a request admitted now would start and
 * first answer, and how long it would wait for a server slot first, admit it or refuse it with how long to wait.
 * A request the server cannot serve within the target is refused at once (429 + Retry-After) instead of queued into
 * lateness: under overload the requests that are admitted still meet the target, and the refused ones learn when
 * to come back (OpenAI's SDKs honour Retry-After). Pure: the estimates are inputs (src/engine/routing/Router.ts
 * learns them, src/server/admission/RequestQueue.ts asks); the server's count bounds stay as a hard cap beside it.
 */
import type { FirstOutputEstimate } from '../../common/engine.ts';
import type { AdmissionSlo } from '../../common/graph.ts';

export interface AdmissionQuery {
  readonly slo: AdmissionSlo;
  /** null: nothing to go by (nothing measured yet, or the engine is idle): only the server's line counts. */
  readonly engine: FirstOutputEstimate | null;
  /** Expected wait for a server slot before the engine sees the request (0 with one free). */
  readonly lineWaitMs: number;
  /** Its first packet is audio (it asks for audio out), else text. */
  readonly wantsAudio: boolean;
}

/**
 * Spoken answers keep up while the frame-making stage's step stays under this share of a frame's duration (the rest
 * is the hops and the vocoder's step); past it a newcomer is refused, to retry after PACE_RETRY_MS (the steps
 * speed up as soon as an answer ends, which no estimate of a queue can time).
 */
export const PACE_SHARE = 0.9;
const PACE_RETRY_MS = 1000;

export type AdmissionDecision =
  | { readonly admit: true }
  | {
      readonly admit: false;
      /** How much later than its bound it would start or first answer: the backlog to drain before a retry fits. */
      readonly retryAfterMs: number;
      /** Which bound, with the figures, for the refusal's message. */
      readonly reason: string;
    };

export function decideAdmission(q: AdmissionQuery): AdmissionDecision {
  const { maxQueueMs, sloTtfpMs } = q.slo;
  const refusals: { overMs: number; reason: string }[] = [];
  const queueMs = q.lineWaitMs + (q.engine?.queueMs ?? 0);
  if (maxQueueMs !== null && queueMs > maxQueueMs)
    refusals.push({
      overMs: queueMs - maxQueueMs,
      reason: `estimated queue ${ms(queueMs)} > max_queue_ms ${maxQueueMs}`,
    });
  if (sloTtfpMs !== null && q.engine !== null) {
    const firstMs = q.lineWaitMs + (q.wantsAudio ? (q.engine.ttfpMs ?? q.engine.ttftMs) : q.engine.ttftMs);
    const what = q.wantsAudio ? 'first audio' : 'first text';
    if (firstMs > sloTtfpMs)
      refusals.push({
        overMs: firstMs - sloTtfpMs,
        reason: `estimated ${what} in ${ms(firstMs)} > slo_ttfp_ms ${sloTtfpMs}`,
      });
  }
  const pace = q.engine?.audioPace;
  if (q.slo.audioPace && q.wantsAudio && pace && pace.stepMs > PACE_SHARE * pace.frameMs)
    refusals.push({
      overMs: PACE_RETRY_MS,
      reason: `frames made in ${ms(pace.stepMs)} a step > ${PACE_SHARE} x the ${ms(pace.frameMs)} a frame plays`,
    });
  if (refusals.length === 0) return { admit: true };
  // The later of the two: a retry must fit both bounds. The backlog drains about a second per second without
  // arrivals, so the excess is the soonest a retry could be admitted.
  return {
    admit: false,
    retryAfterMs: Math.max(...refusals.map((r) => r.overMs)),
    reason: refusals.map((r) => r.reason).join(', '),
  };
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}
