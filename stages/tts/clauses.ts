/**
 * Where text breaks into clauses and sentences, by the rules eSpeak NG applies when Piper phonemizes (so a phrase
 * cut here is a phrase Piper would also have ended, and each clause's terminator is the one Piper keeps):
 *
 * - `.` then whitespace ends a sentence unless the next word starts in lower case ("25. then" reads on);
 * - `!` and `?` (a run of them counts as its first) then whitespace end a sentence;
 * - `,` `;` `:` then whitespace end a clause, and Piper keeps the mark followed by a space;
 * - an ellipsis (`...`, `…`) then whitespace ends a clause with no mark;
 * - a blank line ends a sentence with no mark.
 *
 * Closing quotes and brackets after a mark belong to the clause before the break. A mark at the very end of the text
 * counts only when the text is complete (`final`): while it streams, the next character may still turn "3." into
 * "3.5".
 */

export interface ClauseEnd {
  /** Index just past the clause (its mark and closers; the whitespace after it is not part of it). */
  readonly end: number;
  /** The terminator Piper appends to the clause's phonemes: `.`, `!`, `?`, `,`, `;`, `:` or '' (none). */
  readonly mark: string;
  /** The clause ends its sentence (Piper synthesizes sentence by sentence). */
  readonly sentence: boolean;
}

const CLOSERS = new Set(['"', "'", ')', ']', '}', '”', '’', '»']);
const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/u.test(c);
const isLower = (c: string | undefined): boolean => c !== undefined && /\p{Ll}/u.test(c);

/** Every clause end in `text`, in order. */
export function clauseEnds(text: string, final: boolean): ClauseEnd[] {
  const ends: ClauseEnd[] = [];
  let i = 0;
  while (i < text.length) {
    const found = clauseEndAt(text, i, final);
    if (found === null) {
      i++;
      continue;
    }
    if (found !== 'wait') ends.push(found);
    if (found === 'wait') break;
    i = Math.max(found.end, i + 1);
  }
  return ends;
}

/** The clause end that a mark at `i` makes, null for none, 'wait' when the text after it has not arrived. */
function clauseEndAt(text: string, i: number, final: boolean): ClauseEnd | null | 'wait' {
  const c = text[i];
  if (c === '\n') return blankLineAt(text, i, final);
  let mark: string;
  let j = i + 1;
  if (c === '…' || text.startsWith('...', i)) {
    mark = '';
    j = c === '…' ? i + 1 : i + 3;
    while (text[j] === '.' || text[j] === '…') j++;
  } else if (c === '!' || c === '?') {
    mark = c;
    while (text[j] === '!' || text[j] === '?') j++;
  } else if (c === '.' || c === ',' || c === ';' || c === ':') {
    mark = c;
  } else {
    return null;
  }
  while (CLOSERS.has(text[j])) j++;
  if (j === text.length)
    return final ? { end: j, mark, sentence: mark === '.' || mark === '!' || mark === '?' } : 'wait';
  if (!isSpace(text[j])) return null;
  if (mark !== '.') return { end: j, mark, sentence: mark === '!' || mark === '?' };
  // A period ends the sentence unless the next word starts in lower case: look past the whitespace.
  let k = j;
  while (isSpace(text[k])) k++;
  if (k === text.length) return final ? { end: j, mark, sentence: true } : 'wait';
  return isLower(text[k]) ? null : { end: j, mark, sentence: true };
}

function blankLineAt(text: string, i: number, final: boolean): ClauseEnd | null | 'wait' {
  let k = i + 1;
  while (k < text.length && text[k] !== '\n' && isSpace(text[k])) k++;
  if (k === text.length) return final ? null : 'wait';
  if (text[k] !== '\n') return null;
  // The clause ends where its last visible character does (trailing spaces on the line are not part of it).
  let end = i;
  while (end > 0 && isSpace(text[end - 1])) end--;
  return end === 0 ? null : { end, mark: '', sentence: true };
}

/** The text split into its clauses (trimmed, empty ones left out), each with its terminator. */
export function splitClauses(
  text: string,
): { readonly text: string; readonly mark: string; readonly sentence: boolean }[] {
  const out: { text: string; mark: string; sentence: boolean }[] = [];
  let start = 0;
  for (const e of clauseEnds(text, true)) {
    const clause = text.slice(start, e.end).trim();
    if (clause.length > 0) out.push({ text: clause, mark: e.mark, sentence: e.sentence });
    start = e.end;
  }
  const rest = text.slice(start).trim();
  if (rest.length > 0) out.push({ text: rest, mark: '', sentence: true });
  return out;
}
