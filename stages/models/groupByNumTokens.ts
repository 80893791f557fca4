/**
 * Splits a step's items into groups that add the same number of positions (decodes together, each
 * prefill chunk length together), so a group pads only the past, never the new positions.
 * Returns item indices, groups in first-seen order; throws on a repeated seqId or an empty item.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

export function groupByNumTokens(items: readonly { readonly seqId: string; readonly numTokens: number }[]): number[][] {
  const groups = new Map<number, number[]>();
  const ids = new Set<string>();
  items.forEach((item, i) => {
    if (ids.has(item.seqId))
      throw new ChorusError(ErrorCodes.INTERNAL, `sequence ${item.seqId} appears twice in one step`);
    ids.add(item.seqId);
    if (!(item.numTokens >= 1))
      throw new ChorusError(ErrorCodes.INTERNAL, `sequence ${item.seqId}: a step must add at least one position`);
    let g = groups.get(item.numTokens);
    if (!g) groups.set(item.numTokens, (g = []));
    g.push(i);
  });
  return [...groups.values()];
}
