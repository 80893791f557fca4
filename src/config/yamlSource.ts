/**
 * The YAML text of a config, parsed once, with a way back from a value's path to the line it came from.
 * Every config error names `file:line path`, so the user can jump to the exact spot; the path is in YAML
 * terms (snake_case keys, `stages[1].inputs[0].connector`).
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';

export type { ConfigPath } from '../common/problems.ts';
import type { ConfigPath } from '../common/problems.ts';

export interface SyntaxProblem {
  readonly line: number;
  readonly message: string;
}

export class YamlSource {
  readonly value: unknown;
  /** YAML syntax errors (bad indentation, duplicate keys, tabs...). When any exist, `value` is unusable. */
  readonly syntaxProblems: readonly SyntaxProblem[];
  readonly #doc: Document.Parsed;
  readonly #lines: LineCounter;

  constructor(text: string) {
    this.#lines = new LineCounter();
    // prettyErrors off: we print our own `file:line message`, not yaml's multi-line code frame.
    // merge: YAML `<<: *anchor` keys, so stages can share an engine block without repeating it.
    this.#doc = parseDocument(text, { lineCounter: this.#lines, prettyErrors: false, uniqueKeys: true, merge: true });
    this.syntaxProblems = this.#doc.errors.map((e) => {
      const [line, endLine] = [this.#lineAt(e.pos[0]), this.#lineAt(Math.max(e.pos[0], e.pos[1] - 1))];
      // A mis-indented line is often reported where the enclosing value starts: name the whole span.
      const span = endLine > line ? ` (lines ${line}-${endLine}; check the indentation)` : '';
      return { line, message: `YAML syntax error: ${firstLine(e.message)}${span}` };
    });
    this.value = this.syntaxProblems.length === 0 ? this.#doc.toJS({ maxAliasCount: 100 }) : undefined;
  }

  /**
   * The 1-based line of the deepest node on `path` that exists in the file. When the path ends at a map
   * key, the key's own line is used (a block value starts on the next line, which reads wrong).
   * Missing keys (a required key left out) fall back to their parent, which is where the fix goes.
   */
  lineOf(path: ConfigPath): number {
    let node: unknown = this.#doc.contents;
    let offset = rangeStart(node) ?? 0;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair) break;
        offset = rangeStart(pair.key) ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
        node = node.items[segment];
        offset = rangeStart(node) ?? offset;
      } else {
        break;
      }
    }
    return this.#lineAt(offset);
  }

  #lineAt(offset: number): number {
    return Math.max(1, this.#lines.linePos(offset).line);
  }
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as Node | null | undefined)?.range;
  return range ? range[0] : undefined;
}

function firstLine(message: string): string {
  // yaml appends " at line N, column M" even with prettyErrors off in some code paths; the line is ours to print.
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}

/** `stages[1].inputs[0].connector` */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out === '' ? '(top level)' : out;
}
