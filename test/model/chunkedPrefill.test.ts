/**
 * Prefill chunks across the Thinker and the Talker (engine prefill_chunk_tokens): the Thinker prefills the prompt
 * in chunks, Thinker2Talker sends each chunk's prompt rows at once, and the Talker prefills every piece as it comes,
 * on the real generated models. Text and codec frames must be exactly those of one whole prefill in both, and the
 * Talker's input must be the same rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Thinker2Talker } from '../../stages/processors/thinker2talker.ts';
import { createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import type { TalkerRunner, ThinkerRunner } from '../../stages/types.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import { maxAbsDiff, promptIds, sampling, talkerSpec, tempModelsDir, thinkerSpec } from './helpers.ts';

let models: ReturnType<typeof tempModelsDir>;
let thinker: ThinkerRunner;
let talker: TalkerRunner;

beforeAll(async () => {
  models = tempModelsDir();
  thinker = await createThinkerRunner({ model: thinkerSpec() }, models.dir);
  talker = await createTalkerRunner({ model: talkerSpec() }, models.dir);
});

afterAll(async () => {
  await Promise.all([thinker?.close(), talker?.close()]);
  models?.cleanup();
});

interface Spoken {
  readonly tokens: number[];
  readonly frames: string[];
  /** Every row the Talker was given, in order. */
  readonly rows: Float32Array;
  /** Talker calls before it sampled frame 0 (1 = one whole prefill). */
  readonly talkerPrefillCalls: number;
  /** Rows the Talker had been given by the time the Thinker's prefill finished (before its last chunk's rows). */
  readonly rowsBeforeLastChunk: number;
}

/**
 * The pipeline's order, one request: Thinker prefill chunk by chunk (whole when `chunk` covers the prompt), each
 * take() of rows fed to the Talker at once (context only until the first token's row), then one Thinker decode
 * step per further token and framesPerToken Talker steps per token.
 */
function speak(prompt: number[], chunk: number, numTokens: number, tag: string): Spoken {
  const p = prompt.length;
  const d = thinker.hiddenSize;
  const fpt = talker.framesPerToken;
  const toTalker = new Thinker2Talker(d, p, true, true);
  const sent: Float32Array[] = [];
  const tokens: number[] = [];
  const frames: string[] = [];
  let talkerCalls = 0;
  let rowsGiven = 0;
  let rowsBeforeLastChunk = 0;
  // Until frame 0 every row that comes is a prompt row or the first token's: the Talker prefills it at once,
  // sampling only once the first token's row is in. Later rows wait for their frames (below).
  const feed = (final: boolean) => {
    const c = toTalker.take(final);
    if (!c || c.numRows === 0) return;
    sent.push(c.rows);
    rowsGiven += c.numRows;
    if (frames.length > 0) return;
    const sample = rowsGiven > p;
    const out = talker.execute([{ seqId: tag, rows: c.rows, numRows: c.numRows, sampling: sampling(), sample }])[0];
    talkerCalls++;
    if (sample) frames.push(out.codes.join(','));
  };
  for (let at = 0; at < p; at += chunk) {
    const n = Math.min(chunk, p - at);
    const last = at + n === p;
    if (last) rowsBeforeLastChunk = rowsGiven;
    const out = thinker.execute([
      { seqId: tag, tokenIds: prompt.slice(at, at + n), numTokens: n, sample: last, sampling: sampling() },
    ])[0];
    if (last) tokens.push(out.tokenId!);
    toTalker.onStep(at, n, out.embeds, out.hidden, last ? thinker.embed([out.tokenId!]) : null);
    feed(false);
  }
  for (let t = 1; t < numTokens; t++) {
    const out = thinker.execute([
      { seqId: tag, tokenIds: [tokens.at(-1)!], numTokens: 1, sample: true, sampling: sampling() },
    ])[0];
    tokens.push(out.tokenId!);
    toTalker.onStep(p + t - 1, 1, out.embeds, out.hidden, thinker.embed([out.tokenId!]));
    feed(false);
  }
  feed(true);
  const rows = concatFloat32(sent);
  const row = (r: number) => rows.subarray(r * 2 * d, (r + 1) * 2 * d);
  for (let k = 1; k < numTokens * fpt; k++)
    frames.push(
      talker
        .execute([{ seqId: tag, rows: row(p + Math.floor(k / fpt)), numRows: 1, sampling: sampling() }])[0]
        .codes.join(','),
    );
  thinker.free(tag);
  talker.free(tag);
  return { tokens, frames, rows, talkerPrefillCalls: talkerCalls, rowsBeforeLastChunk };
}

describe('prefill in chunks across the Thinker and the Talker', () => {
  it('gives the text, the rows and the codec frames of one whole prefill', () => {
    const prompt = promptIds(45, 3);
    const whole = speak(prompt, prompt.length, 6, 'whole');
    expect(whole.talkerPrefillCalls).toBe(1);
    expect(whole.rowsBeforeLastChunk).toBe(0);
    for (const chunk of [8, 16, 32]) {
      const chunked = speak(prompt, chunk, 6, `chunk${chunk}`);
      // The prompt rows of the first chunks reached the Talker before the Thinker's prefill ended, and it
      // prefilled them piece by piece.
      expect(chunked.talkerPrefillCalls).toBe(Math.ceil(prompt.length / chunk));
      expect(chunked.rowsBeforeLastChunk).toBe(chunk * (Math.ceil(prompt.length / chunk) - 1));
      expect(chunked.tokens).toEqual(whole.tokens);
      expect(chunked.frames).toEqual(whole.frames);
      // The rows differ by float rounding at most (a chunk's attention sums over fewer keys at a time).
      expect(maxAbsDiff(chunked.rows, whole.rows)).toBeLessThan(1e-4);
    }
    // Not trivially equal: the frames change with the text.
    expect(new Set(whole.frames).size).toBeGreaterThan(3);
    expect(speak(promptIds(45, 4), 45, 6, 'other').frames).not.toEqual(whole.frames);
  });
});
