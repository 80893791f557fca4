/**
 * Streaming text -> phrases for speech: the Thinker's text arrives in deltas, and each phrase goes to the voice as
 * soon as it is complete. A phrase never spans two sentences (Piper synthesizes sentence by sentence, so a phrase
 * cut at each sentence end sounds as Piper's whole-text synthesis does). Within a sentence it is cut at a clause
 * mark (`,` `;` `:` ...) only when that buys something:
 *
 * - the first phrase, which decides when the listener hears anything, ends at the first clause mark once it holds
 *   `firstMinChars` characters, and, if no mark comes, after `firstMaxWords` words (0: wait for a mark): the
 *   text-to-speech counterpart of the codec's initial chunk, a shorter first piece for an earlier first audio at the
 *   cost of a prosody break;
 * - a later phrase ends at a clause mark once it holds `maxChars` characters, so a long sentence does not hold its
 *   audio back until its end (the audio of the phrase before it covers the time the next one takes).
 *
 * A later phrase may also be cut early by its caller (`cutEarly()`, the tts stage's lead rule: its listener would
 * run dry before the sentence ends and is synthesized): at its last clause mark, else after its last complete word,
 * never shorter than `firstMinChars`. Whatever remains when the text ends is the last phrase (`end()`). Pure: no
 * clock, no model.
 */
import { clauseEnds } from './clauses.ts';

export interface PhrasePolicy {
  readonly firstMinChars: number;
  readonly firstMaxWords: number;
  readonly maxChars: number;
}

export const DEFAULT_PHRASE_POLICY: PhrasePolicy = { firstMinChars: 16, firstMaxWords: 0, maxChars: 160 };

export class PhraseSplitter {
  /** Text received and not yet in a phrase. */
  private pending = '';
  private phrasesOut = 0;

  constructor(private readonly policy: PhrasePolicy = DEFAULT_PHRASE_POLICY) {}

  /** Phrases emitted so far. */
  get numPhrases(): number {
    return this.phrasesOut;
  }

  /** Characters of text received and not yet in a phrase (leading whitespace left out). */
  get pendingChars(): number {
    return this.pending.trimStart().length;
  }

  /**
   * A later phrase, now: the pending text up to its last clause mark, or else up to its last complete word (the word
   * still arriving stays), if that holds at least `firstMinChars` characters; else nothing. The first phrase keeps its
   * own rule (nothing).
   */
  cutEarly(): string[] {
    if (this.first) return [];
    const out: string[] = [];
    const fits = (end: number) => visibleLength(this.pending, end) >= this.policy.firstMinChars;
    const cut = clauseEnds(this.pending, false).findLast((e) => fits(e.end))?.end ?? lastWordEnd(this.pending);
    if (cut === null || !fits(cut)) return out;
    this.emit(this.pending.slice(0, cut), out);
    this.pending = this.pending.slice(cut);
    return out;
  }

  /** Adds a delta of text; returns the phrases it completes, in order. */
  push(delta: string): string[] {
    this.pending += delta;
    const out: string[] = [];
    for (;;) {
      const cut = this.nextCut();
      if (cut === null) break;
      this.emit(this.pending.slice(0, cut), out);
      this.pending = this.pending.slice(cut);
    }
    return out;
  }

  /** The text has ended: what remains, as the last phrase (none when only whitespace or marks remain). */
  end(): string[] {
    const out: string[] = [];
    for (const cut of this.cutsAtEnd()) {
      this.emit(this.pending.slice(0, cut), out);
      this.pending = this.pending.slice(cut);
    }
    this.emit(this.pending, out);
    this.pending = '';
    return out;
  }

  private get first(): boolean {
    return this.phrasesOut === 0;
  }

  /** Where the pending text's next phrase ends, or null while it must wait for more text. */
  private nextCut(): number | null {
    for (const e of clauseEnds(this.pending, false)) {
      if (e.sentence || visibleLength(this.pending, e.end) >= this.clauseMinChars()) return e.end;
    }
    if (this.first && this.policy.firstMaxWords > 0) return wordCut(this.pending, this.policy.firstMaxWords);
    return null;
  }

  /** At the end of the text the final marks count too: the same cuts, over the whole rest. */
  private cutsAtEnd(): number[] {
    const cuts: number[] = [];
    let from = 0;
    for (const e of clauseEnds(this.pending, true)) {
      const min = cuts.length === 0 ? this.clauseMinChars() : this.policy.maxChars;
      if (e.sentence || visibleLength(this.pending.slice(from), e.end - from) >= min) {
        cuts.push(e.end);
        from = e.end;
      }
    }
    return cuts.map((c, i) => c - (i > 0 ? cuts[i - 1] : 0));
  }

  private clauseMinChars(): number {
    return this.first ? this.policy.firstMinChars : this.policy.maxChars;
  }

  private emit(text: string, out: string[]): void {
    const phrase = text.trim();
    // Marks or whitespace alone have nothing to say: they stay out (a phrase with no letter or digit).
    if (!/[\p{L}\p{N}]/u.test(phrase)) return;
    out.push(phrase);
    this.phrasesOut++;
  }
}

/** Characters of text[0, end) without the leading whitespace. */
function visibleLength(text: string, end: number): number {
  return text.slice(0, end).trimStart().length;
}

/** Index just past the last word that whitespace follows (complete), or null. */
function lastWordEnd(text: string): number | null {
  let end: number | null = null;
  for (const m of text.matchAll(/\S+(?=\s)/gu)) end = m.index + m[0].length;
  return end;
}

/** Index just past the maxWords-th word, when a space after it has arrived (the word is complete); else null. */
function wordCut(text: string, maxWords: number): number | null {
  const words = /\S+(?=\s)/gu;
  let count = 0;
  for (let m = words.exec(text); m !== null; m = words.exec(text)) {
    if (++count === maxWords) return m.index + m[0].length;
  }
  return null;
}
