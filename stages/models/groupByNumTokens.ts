/**
 * Splits a step's items into groups that add the same number of positions (decodes together, each
 * prefill chunk length together), so a group pads only the past, never the new positions.
 *
 * With `pastLength`, a group is split again by the sequences' past lengths: a run pads every row's past to its
 * longest, so one long sequence (a clip's 850 positions) decoding beside short ones (texts' 40) made each of their
 * decode steps attend over 850 padded positions: 6.5x the CPU of the texts' decodes alone (tiny-omni's Thinker,
 * 15 texts; the probe bench/video/longBeside.ts, at the tag bench-probes-2026-12-03b). Items are taken by past
 * length, shortest first, and a new run starts at the first whose past exceeds PAST_SPREAD times the run's shortest
 * plus PAST_SLACK positions (short contexts still share one run: a run has a fixed cost of its own). The order
 * within a run is stable while its members stay the same, so a steady batch still feeds its KV back as is.
 *
 * Returns item indices, groups in first-seen order (a split group's runs shortest past first); throws on a repeated
 * seqId or an empty item.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

/** A run's longest past is at most this many times its shortest (plus PAST_SLACK). */
export const PAST_SPREAD = 2;
/** Positions of past any run may pad on top of PAST_SPREAD (short contexts are not worth a run of their own). */
export const PAST_SLACK = 128;

export function groupByNumTokens(
  items: readonly { readonly seqId: string; readonly numTokens: number }[],
  pastLength?: (seqId: string) => number,
): number[][] {
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
  if (!pastLength) return [...groups.values()];
  return [...groups.values()].flatMap((group) => splitByPast(group, (i) => pastLength(items[i].seqId)));
}

/** The group's runs: by past length, a new run where the past outgrows the run's shortest (see above). */
function splitByPast(group: readonly number[], pastOf: (index: number) => number): number[][] {
  if (group.length < 2) return [[...group]];
  const byPast = group.map((i) => ({ i, past: pastOf(i) })).sort((a, b) => a.past - b.past);
  const runs: number[][] = [];
  let shortest = -1;
  for (const { i, past } of byPast) {
    if (runs.length === 0 || past > PAST_SPREAD * shortest + PAST_SLACK) {
      runs.push([]);
      shortest = past;
    }
    runs[runs.length - 1].push(i);
  }
  return runs;
}
