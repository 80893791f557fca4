/**
 * How config rules report problems: a path into the YAML (`stages[2].model.hidden_size`) and a sentence. The
 * config loader's collector turns each into `file:line path: message`; rules elsewhere (the stage kind
 * descriptors) only need this much of it.
 */
export type ConfigPath = readonly (string | number)[];

export interface ProblemSink {
  add(path: ConfigPath, message: string): void;
  warn(path: ConfigPath, message: string): void;
  /** Problems added so far (a rule compares before/after to know whether it found any). */
  readonly count: number;
}

/** "did you mean X?" for a misspelt key or name: the closest candidate within a small edit distance. */
export function suggest(word: string, candidates: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of candidates) {
    // A truncated key ("pool" for "pool_size") is a near miss however many letters are missing.
    const d = word.length >= 3 && candidate.startsWith(word) ? 1 : editDistance(word, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length];
}
