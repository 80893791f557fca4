/**
 * The tts stage's text side: clauses cut where eSpeak NG (so Piper) cuts them, with the mark Piper keeps; phrases
 * cut from streamed text by the first-phrase rule, never across a sentence, the same whatever the deltas; phoneme
 * ids interleaved with the pad as Piper's voices read them.
 */
import { describe, expect, it } from 'vitest';
import { clauseEnds, splitClauses } from '../../stages/tts/clauses.ts';
import { PhraseSplitter, type PhrasePolicy } from '../../stages/tts/PhraseSplitter.ts';
import { idMapProblems, phonemeIds } from '../../stages/tts/phonemeIds.ts';
import { speakableText, symbolsOf } from '../../stages/tts/phonemes.ts';

const marks = (text: string) => splitClauses(text).map((c) => [c.text, c.mark, c.sentence]);

describe('clauses', () => {
  it('cuts at marks followed by whitespace, keeping each mark and whether it ends a sentence', () => {
    expect(marks('Hello there, the capital of France is Paris. How are you?')).toEqual([
      ['Hello there,', ',', false],
      ['the capital of France is Paris.', '.', true],
      ['How are you?', '?', true],
    ]);
    expect(marks('Well; I think: maybe! Dr. Smith paid $3.50 for 12 apples.')).toEqual([
      ['Well;', ';', false],
      ['I think:', ':', false],
      ['maybe!', '!', true],
      ['Dr.', '.', true],
      ['Smith paid $3.50 for 12 apples.', '.', true],
    ]);
  });

  it('reads on past a period before a lower-case word, numbers and abbreviations inside a word', () => {
    expect(marks('I am 25. then I left. e.g. this 1,000 3.5')).toEqual([
      ['I am 25. then I left. e.g. this 1,000 3.5', '', true],
    ]);
  });

  it('takes an ellipsis as a clause with no mark, a run of ?! as its first, closers with the clause', () => {
    expect(marks('Wait... what?! "Yes." (Fine.) Ok')).toEqual([
      ['Wait...', '', false],
      ['what?!', '?', true],
      ['"Yes."', '.', true],
      ['(Fine.)', '.', true],
      ['Ok', '', true],
    ]);
  });

  it('ends a sentence at a blank line, not at a single line break', () => {
    expect(marks('Line one\nline two\n\nNext part')).toEqual([
      ['Line one\nline two', '', true],
      ['Next part', '', true],
    ]);
  });

  it('does not decide a mark at the end of streaming text until what follows it arrives', () => {
    expect(clauseEnds('It costs 3.', false)).toEqual([]);
    expect(clauseEnds('It costs 3.5', false)).toEqual([]);
    expect(clauseEnds('It is 3. ', false)).toEqual([]); // the next word may start in lower case
    expect(clauseEnds('It is 3. Then', false)).toEqual([{ end: 8, mark: '.', sentence: true }]);
    expect(clauseEnds('It is 3.', true)).toEqual([{ end: 8, mark: '.', sentence: true }]);
  });
});

const policy = (p: Partial<PhrasePolicy> = {}): PhrasePolicy => ({
  firstMinChars: 10,
  firstMaxWords: 0,
  maxChars: 40,
  ...p,
});

/** Feeds the text in deltas of `step` characters; returns every phrase, the end's included. */
function phrases(text: string, p: PhrasePolicy, step: number): string[] {
  const splitter = new PhraseSplitter(p);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += step) out.push(...splitter.push(text.slice(i, i + step)));
  out.push(...splitter.end());
  return out;
}

const ANSWER =
  'Sure, the capital of France is Paris. It sits on the Seine, in the north of the country, and about two ' +
  'million people live there; many more in its region. Is there anything else?';

describe('PhraseSplitter', () => {
  it('cuts the first phrase at its first clause mark past firstMinChars, later ones at sentence ends', () => {
    expect(phrases(ANSWER, policy({ firstMinChars: 5, maxChars: 1000 }), 1000)).toEqual([
      'Sure,',
      'the capital of France is Paris.',
      'It sits on the Seine, in the north of the country, and about two million people live there; many more in ' +
        'its region.',
      'Is there anything else?',
    ]);
  });

  it('lets a clause shorter than firstMinChars run on to the next mark', () => {
    expect(phrases(ANSWER, policy({ firstMinChars: 10, maxChars: 1000 }), 1000)[0]).toBe(
      'Sure, the capital of France is Paris.',
    );
  });

  it('cuts a long sentence at a clause mark once the phrase reaches maxChars', () => {
    expect(phrases(ANSWER, policy({ firstMinChars: 5, maxChars: 40 }), 1000).slice(2)).toEqual([
      'It sits on the Seine, in the north of the country,',
      'and about two million people live there;',
      'many more in its region.',
      'Is there anything else?',
    ]);
  });

  it('cuts the first phrase after firstMaxWords complete words when no mark comes', () => {
    const p = policy({ firstMinChars: 5, firstMaxWords: 4 });
    expect(phrases('The answer that you want is here. Next', p, 3)).toEqual([
      'The answer that you',
      'want is here.',
      'Next',
    ]);
  });

  it('gives the same phrases whatever the deltas are', () => {
    const whole = phrases(ANSWER, policy(), ANSWER.length);
    for (const step of [1, 2, 3, 7, 13]) expect(phrases(ANSWER, policy(), step)).toEqual(whole);
  });

  it('holds a number across deltas ("3." then "5") and flushes the rest at the end', () => {
    const splitter = new PhraseSplitter(policy({ firstMinChars: 1 }));
    expect(splitter.push('It costs 3.')).toEqual([]);
    expect(splitter.push('5 euros')).toEqual([]);
    expect(splitter.push('. Ok')).toEqual(['It costs 3.5 euros.']);
    expect(splitter.end()).toEqual(['Ok']);
    expect(splitter.numPhrases).toBe(2);
  });

  it('cuts a later phrase early at its last clause mark, else after its last complete word, never too short', () => {
    const splitter = new PhraseSplitter(policy({ firstMinChars: 10, maxChars: 200 }));
    expect(splitter.cutEarly()).toEqual([]); // the first phrase keeps its own rule
    expect(splitter.push('Sure thing, the capital of France, which is Par')).toEqual(['Sure thing,']);
    expect(splitter.pendingChars).toBe(35);
    expect(splitter.cutEarly()).toEqual(['the capital of France,']);
    expect(splitter.cutEarly()).toEqual([]); // "which is" is under 10 characters
    splitter.push('is, as everyone knows');
    expect(splitter.cutEarly()).toEqual(['which is Paris,']);
    expect(splitter.cutEarly()).toEqual(['as everyone']); // no mark: up to the last word complete
    expect(splitter.push(' well. Ok')).toEqual(['knows well.']);
    expect(splitter.end()).toEqual(['Ok']);
  });

  it('leaves out phrases with nothing to say', () => {
    expect(phrases('... ! Hello there, you.  ?', policy({ firstMinChars: 1 }), 2)).toEqual(['Hello there,', 'you.']);
    expect(new PhraseSplitter(policy()).end()).toEqual([]);
  });
});

describe('phoneme ids', () => {
  const map = { _: [0], '^': [1], $: [2], ' ': [3], h: [20], ə: [59], ˈ: [120], ',': [8] };

  it('interleaves the pad after BOS and every symbol, and ends with EOS', () => {
    expect(phonemeIds(['h', 'ˈ', 'ə', ',', ' '], map)).toEqual({
      ids: [1, 0, 20, 0, 120, 0, 59, 0, 8, 0, 3, 0, 2],
      missing: [],
    });
  });

  it('leaves out and reports symbols the map does not hold', () => {
    expect(phonemeIds(['h', 'ʒ', 'ə'], map)).toEqual({ ids: [1, 0, 20, 0, 59, 0, 2], missing: ['ʒ'] });
    expect(phonemeIds(['constructor'], map).missing).toEqual(['constructor']);
  });

  it('splits IPA into code points after canonical decomposition', () => {
    expect(symbolsOf('ɪ̃ é')).toEqual(['ɪ', '\u0303', ' ', 'e', '\u0301']);
  });

  it('names the control symbols a map lacks', () => {
    expect(idMapProblems({ _: [0], '^': [1] })).toEqual(['phoneme_id_map has no "$" (the end symbol)']);
  });

  it('turns markdown layout into spaces before phonemes', () => {
    expect(speakableText('**Paris** is #1 `x`')).toBe('  Paris   is  1  x ');
  });
});
