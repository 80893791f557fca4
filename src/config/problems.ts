/**
 * Collects every problem found in a config, so one `chorus config check` run lists them all instead of
 * making the user fix them one at a time. Each line reads `file:line path: message`.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { ProblemSink } from '../common/problems.ts';
import { formatPath, type ConfigPath, type YamlSource } from './yamlSource.ts';

export { suggest } from '../common/problems.ts';

interface Problem {
  readonly line: number;
  readonly text: string;
}

export class Problems implements ProblemSink {
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
      `invalid stage graph (${lines.length} ${noun}; fix the file and run \`chorus config check ` +
        `${this.#file}\`):\n${lines.join('\n')}`,
    );
  }
}
