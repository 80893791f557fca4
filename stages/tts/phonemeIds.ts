/**
 * A sentence's phoneme symbols -> the ids a Piper voice reads: the beginning-of-sentence symbol, then every symbol
 * followed by the pad symbol, then the end-of-sentence symbol (`^ _ h _ ə _ ... _ $`). The pad between symbols is
 * how Piper's VITS voices are trained: the duration predictor gives the pads their own (often zero) lengths. A
 * symbol the voice's map does not hold is left out, as Piper does, and reported so the stage can count it.
 */

export const BOS = '^';
export const EOS = '$';
export const PAD = '_';

export type PhonemeIdMap = Readonly<Record<string, readonly number[]>>;

export interface EncodedSentence {
  readonly ids: number[];
  /** Symbols the map does not hold (left out). */
  readonly missing: string[];
}

export function phonemeIds(symbols: readonly string[], map: PhonemeIdMap): EncodedSentence {
  const pad = map[PAD];
  const ids: number[] = [...map[BOS], ...pad];
  const missing: string[] = [];
  for (const symbol of symbols) {
    const mapped = Object.hasOwn(map, symbol) ? map[symbol] : undefined;
    if (mapped === undefined) {
      missing.push(symbol);
      continue;
    }
    ids.push(...mapped, ...pad);
  }
  ids.push(...map[EOS]);
  return { ids, missing };
}

/** The map's problems for a voice (the three control symbols must be there), or [] when it is usable. */
export function idMapProblems(map: PhonemeIdMap): string[] {
  return [BOS, EOS, PAD]
    .filter((s) => !Object.hasOwn(map, s) || map[s].length === 0)
    .map((s) => `phoneme_id_map has no "${s}" (the ${s === BOS ? 'beginning' : s === EOS ? 'end' : 'pad'} symbol)`);
}
