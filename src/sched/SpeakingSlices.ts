/**
 * Speaking slices (`chunk_policy.speaking_slice`, issue 41 item 5). Pure: the core says which of a step's requests
 * may wait.
 *
 * First audio first (FirstAudioFirst.ts) holds the answers already speaking back once a newcomer's add has reached a
 * stage, but not the step in progress when it comes: beside sixteen long spoken answers the Thinker and the Talker run
 * their batch of sixteen back to back, and a newcomer's add and rows wait for that step (a Talker step of sixteen at
 * 50-64 ms against 4-9 ms for one, load 34 in an own group; the newcomer's first audio 2.4-3.5x its 28 ms alone,
 * bench/NOTES.md). Those answers are seconds of audio ahead of their listeners and need no step of sixteen: so a
 * step takes at most `size` of the answers that may wait (speaking for a while, listener far ahead: the same test as
 * first audio first's), in turns, least recently stepped first, and the others keep their seats and KV for the next
 * steps. The per-row cost of a decode dominates on these models (a step of sixteen is ~14 of one), so the same frames
 * cost a few steps' overhead more, and a newcomer waits for a step of `size`.
 *
 * The turns are stable: with the same answers every step, the same groups run in the same order (least recently
 * stepped first, ties in the plan's order), so each group's KV is fed back as is (stages/models/SeqKvCache.ts).
 */
export class SpeakingSlices {
  /** The step each request last took part in (this class's own count). */
  private readonly lastStep = new Map<string, number>();
  private steps = 0;

  constructor(private readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError('speaking_slice must be an integer >= 1');
  }

  /**
   * Which of a step's requests (in the plan's order) run in it: every one that may not wait, and of those that may,
   * at most `size`, the least recently stepped first. null: the step runs as planned (no more than `size` may wait).
   */
  keep(planned: readonly string[], mayWait: (requestId: string) => boolean): ReadonlySet<string> | null {
    this.steps++;
    const waitable = planned.filter(mayWait);
    if (waitable.length <= this.size) {
      for (const id of planned) this.lastStep.set(id, this.steps);
      return null;
    }
    const last = (id: string) => this.lastStep.get(id) ?? 0;
    const chosen = waitable
      .map((id, order) => ({ id, order }))
      .sort((a, b) => last(a.id) - last(b.id) || a.order - b.order)
      .slice(0, this.size)
      .map((c) => c.id);
    const kept = new Set([...planned.filter((id) => !mayWait(id)), ...chosen]);
    for (const id of kept) this.lastStep.set(id, this.steps);
    return kept;
  }

  /** The request left the stage. */
  removed(requestId: string): void {
    this.lastStep.delete(requestId);
  }
}
