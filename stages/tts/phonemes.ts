/**
 * Text -> Piper's phonemes: eSpeak NG's IPA (the `phonemizer` package, eSpeak NG compiled to WebAssembly), shaped
 * the way Piper shapes it before looking the symbols up in a voice's phoneme_id_map:
 *
 * - one list per sentence (Piper runs the voice once per sentence);
 * - each clause's IPA followed by its terminator (`.` `!` `?` `,` `;` `:`), a clause mark also by a space: the voice
 *   was trained with them, they carry the pauses and the intonation;
 * - eSpeak's language-switch flags ("(fr)") left out;
 * - every symbol one Unicode code point after canonical decomposition (NFD), so a stress mark or a diacritic is its
 *   own symbol.
 *
 * phonemizer returns a clause's IPA without its punctuation, so the clauses are cut here (clauses.ts, by eSpeak's
 * rules) and phonemized one by one, and each gets back the mark it ended with. Where eSpeak still splits a clause
 * this code did not (rare: "one,two" with no space), the pieces are joined with no mark.
 *
 * The WebAssembly module loads on first use (~0.4 s): a stage calls `ready()` at boot, not on a first phrase.
 */
import { splitClauses } from './clauses.ts';

type Phonemize = (text: string, language?: string) => Promise<string[]>;

let phonemizeFn: Promise<Phonemize> | null = null;

/**
 * Imports phonemizer once. Its Emscripten glue adds process-wide `uncaughtException` and `unhandledRejection`
 * listeners that rethrow: a crash anywhere in the stage would then print the module's 1.3 MB minified source line
 * into the log. They are taken off again; the stage's own handling of errors stays what it was.
 */
function loadPhonemizer(): Promise<Phonemize> {
  phonemizeFn ??= (async () => {
    const uncaught = new Set(process.listeners('uncaughtException'));
    const unhandled = new Set(process.listeners('unhandledRejection'));
    const m = await import('phonemizer');
    for (const l of process.listeners('uncaughtException'))
      if (!uncaught.has(l)) process.removeListener('uncaughtException', l);
    for (const l of process.listeners('unhandledRejection'))
      if (!unhandled.has(l)) process.removeListener('unhandledRejection', l);
    return m.phonemize as Phonemize;
  })();
  return phonemizeFn;
}

/** Marks after which Piper puts a space (within a sentence). */
const CLAUSE_MARKS = new Set([',', ';', ':']);

/** Characters an assistant's markdown uses for layout, which eSpeak would read out ("asterisk", "hash"). */
const MARKUP = /[*#`_~|<>[\]{}]/gu;

/** What of `text` is meant to be heard: markdown layout characters become spaces. */
export function speakableText(text: string): string {
  return text.replace(MARKUP, ' ');
}

export class PiperPhonemizer {
  constructor(
    /** eSpeak's voice (the voice config's `espeak.voice`, e.g. "en-us"). */
    readonly espeakVoice: string,
  ) {}

  /** Loads eSpeak NG and checks the voice exists (a phonemize of one word). */
  async ready(): Promise<void> {
    const phonemize = await loadPhonemizer();
    await phonemize('ready', this.espeakVoice);
  }

  /** The phoneme symbols of each sentence of `text`, in order (sentences with no phonemes left out). */
  async sentences(text: string): Promise<string[][]> {
    const phonemize = await loadPhonemizer();
    const speakable = speakableText(text);
    const clauses = splitClauses(speakable);
    // One call for the whole text when eSpeak cut it where clauses.ts did (the usual case: each call also loads the
    // voice again); otherwise clause by clause, so that each clause's IPA meets its own mark.
    let ipas = await phonemize(speakable, this.espeakVoice);
    if (ipas.length !== clauses.length) {
      ipas = [];
      for (const clause of clauses) ipas.push((await phonemize(clause.text, this.espeakVoice)).join(''));
    }
    const sentences: string[][] = [];
    let current = '';
    clauses.forEach((clause, i) => {
      const ipa = ipas[i].replace(/\([^)]+\)/gu, '');
      // A clause eSpeak gives no phonemes (punctuation alone) adds nothing, not even its mark.
      if (ipa.length > 0) current += ipa + clause.mark + (CLAUSE_MARKS.has(clause.mark) ? ' ' : '');
      if (clause.sentence && current.length > 0) {
        sentences.push(symbolsOf(current));
        current = '';
      }
    });
    if (current.length > 0) sentences.push(symbolsOf(current));
    return sentences;
  }
}

/** One symbol per code point after canonical decomposition. */
export function symbolsOf(ipa: string): string[] {
  return [...ipa.normalize('NFD')];
}
