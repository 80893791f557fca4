/**
 * Log probabilities for chat's `logprobs` / `top_logprobs`: the log-softmax of the model's raw logits (before
 * temperature, penalties, logit bias, bans and grammar masks, as vLLM's default), for the sampled token and the k
 * most likely. Only a request that asks pays for it (one pass over the row, plus a k-sized insertion list).
 */
import type { TokenLogprobs } from '../../src/common/payloads.ts';

/** OpenAI reports an impossible token as -9999 rather than -Infinity (JSON has no infinity). */
const FLOOR = -9999;

/**
 * The chosen id's logprob and the top k (0-20) ids by logprob, best first (equal values: lower id first), over the
 * first `limit` logits (a model whose logits are wider than its tokenizer's vocabulary).
 */
export function tokenLogprobs(logits: Float32Array, chosen: number, k: number, limit = logits.length): TokenLogprobs {
  const n = Math.min(limit, logits.length);
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i] - max);
  const logZ = max + Math.log(sum);
  const ids: number[] = [];
  for (let i = 0; i < n && k > 0; i++) {
    if (ids.length === k) {
      if (!(logits[i] > logits[ids[k - 1]])) continue;
      ids.pop();
    }
    let at = ids.length;
    while (at > 0 && logits[i] > logits[ids[at - 1]]) at--;
    ids.splice(at, 0, i);
  }
  const lp = (id: number): number => (id >= 0 && id < n ? Math.max(FLOOR, logits[id] - logZ) : FLOOR);
  return { logprob: lp(chosen), top: ids.map((id) => ({ id, logprob: lp(id) })) };
}
