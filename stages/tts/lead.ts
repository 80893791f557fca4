/**
 * The lead rule of a tts stage: when a later phrase is cut early (PhraseSplitter.cutEarly).
 *
 * A later phrase normally ends at its sentence (or at a clause mark past `phrase_max_chars`), and its synthesis waits
 * for that end. That is fine while its listener has audio in hand, not when the voice is shared (several answers due
 * together) or the sentence is long after a short first phrase. So on each text delta the stage weighs the pending
 * text's listener: its runway (the audio sent and not yet played, plus the audio of its sentences queued) against the
 * synthesis due before the pending text's audio could follow (its own queued sentences, other listeners' sentences
 * due before it runs dry, and the pending text as one phrase). The text is cut into a phrase now when the runway still
 * covers that synthesis but by less than `margin` times: waiting longer for the sentence's end would leave it late.
 * When the runway no longer covers it (the Thinker or the machine is too slow for this answer), cutting cannot save
 * the gap and would only split it into several: the sentence is left to end as it would.
 */
import type { SpeechPace } from './speechPace.ts';

/** What the lead rule weighs for one request's pending text (milliseconds). */
export interface LeadView {
  /** Until its listener runs dry, counting the audio of its sentences not yet synthesized. */
  readonly runwayMs: number;
  /** Synthesis of the pending text as one phrase. */
  readonly pendingMs: number;
  /** Synthesis due before the pending text's turn: its own queued sentences, others' due before its runway ends. */
  readonly aheadMs: number;
}

/** Whether the pending text must become a phrase now (margin 0: never). */
export function mustCutEarly(v: LeadView, margin: number): boolean {
  const dueMs = v.aheadMs + v.pendingMs;
  return margin > 0 && v.runwayMs >= dueMs && v.runwayMs < margin * dueMs;
}

/** What the rule reads of a request. */
export interface LeadRequest {
  /** Phoneme ids of each sentence phonemized and not yet synthesized (0: nothing to say). */
  readonly queuedIds: readonly number[];
  /** Characters of its phrases still being phonemized. */
  readonly phonemizingChars: number;
  /** When its listener runs dry on the audio sent (epoch ms); null: no audio sent yet (playing starts on arrival). */
  readonly dryAtMs: number | null;
}

/** Each queued piece of a request's speech: when it is due (ms from now) and its ids, in order; and the runway. */
function queueOf(
  r: LeadRequest,
  pace: SpeechPace,
  nowMs: number,
): { items: { dueMs: number; ids: number }[]; runwayMs: number } {
  let dueMs = r.dryAtMs === null ? 0 : r.dryAtMs - nowMs;
  const items: { dueMs: number; ids: number }[] = [];
  for (const ids of [...r.queuedIds, pace.idsOf(r.phonemizingChars)]) {
    if (ids <= 0) continue;
    items.push({ dueMs, ids });
    dueMs += pace.audioMsOf(ids);
  }
  return { items, runwayMs: dueMs };
}

/** The rule's view of `req`'s pending text of `pendingChars` among `all` (req included); null: no cost known yet. */
export function leadView(
  req: LeadRequest,
  pendingChars: number,
  all: Iterable<LeadRequest>,
  pace: SpeechPace,
  nowMs: number,
): LeadView | null {
  const pendingMs = pace.costMs(pace.idsOf(pendingChars));
  if (pendingMs === null || pendingMs === 0) return null;
  const own = queueOf(req, pace, nowMs);
  let aheadMs = own.items.reduce((sum, it) => sum + pace.costMs(it.ids)!, 0);
  for (const other of all) {
    if (other === req) continue;
    for (const it of queueOf(other, pace, nowMs).items) if (it.dueMs < own.runwayMs) aheadMs += pace.costMs(it.ids)!;
  }
  return { runwayMs: own.runwayMs, pendingMs, aheadMs };
}
