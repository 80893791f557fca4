/**
 * Collects every problem found in a config, so one `chorus config check` run lists them all instead of
 * making the user fix them one at a time. Each line reads `file:line path: message`.
 */
import { ChorusError, ErrorCodes } from '../errors.ts';
import { formatPath, type ConfigPath, type YamlSource } from './yamlSource.ts';

interface Problem {
  readonly line: number;
  readonly text: string;
}

export class Problems {
  readonly #file: string;
  readonly #source: YamlSource;
  readonly #problems: Problem[] = [];
  readonly warnings: string[] = [];

  constructor(file: string, source: YamlSource) {
    this.#file = file;
    this.#source = source;
  }

  get count(): number {
    return this.#problems.length;
  }

  add(path: ConfigPath, message: string): void {
    const line = this.#source.lineOf(path);
    this.#problems.push({ line, text: `${this.#file}:${line} ${formatPath(path)}: ${message}` });
  }

  addAtLine(line: number, message: string): void {
    this.#problems.push({ line, text: `${this.#file}:${line} ${message}` });
  }

  warn(path: ConfigPath, message: string): void {
    this.warnings.push(`${this.#file}:${this.#source.lineOf(path)} ${formatPath(path)}: ${message}`);
  }

  /** Throws one ChorusError listing every problem, in file order, when there is any. */
  throwIfAny(): void {
    if (this.#problems.length === 0) return;
    const sorted = [...this.#problems].sort((a, b) => a.line - b.line);
    const lines = [...new Set(sorted.map((p) => p.text))];
    const noun = lines.length === 1 ? 'problem' : 'problems';
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `invalid stage graph (${lines.length} ${noun}; fix the file and run \`chorus config check ${this.#file}\`):\n${lines.join('\n')}`,
    );
  }
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
