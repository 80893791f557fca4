/**
 * The KV cache must not change the math: decoding step by step from the cache gives the logits a full
 * recompute of the sequence so far gives, alone and inside a left-padded batch. The generated Thinker returns the
 * last position's logits (what a step samples from), so each step is checked against a prefill of its prefix.
 */
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureModel } from '../../stages/models/ensureModel.ts';
import { KvDecoder } from '../../stages/models/KvDecoder.ts';
import { SyncSession, sessionOptions } from '../../stages/models/SyncSession.ts';
import { loadTokenEmbedder, type TokenEmbedder } from '../../stages/thinker/TokenEmbedder.ts';
import { readThinkerSignature, type ThinkerSignature } from '../../stages/thinker/thinkerSignature.ts';
import { maxAbsDiff, promptIds, smallThinker, tempModelsDir, thinkerSpec } from './helpers.ts';

const V = smallThinker.vocabSize;
const D = smallThinker.hiddenSize;
let models: ReturnType<typeof tempModelsDir>;
let session: SyncSession;
let signature: ThinkerSignature;
let embedder: TokenEmbedder;

beforeAll(async () => {
  models = tempModelsDir();
  const files = await ensureModel(thinkerSpec(), models.dir);
  session = SyncSession.create(files.files['decoder_model.onnx'], sessionOptions({ threads: 1 }));
  signature = readThinkerSignature(session, files.files['decoder_model.onnx']);
  embedder = loadTokenEmbedder(files.files['embed_tokens.onnx'], sessionOptions({ threads: 1 }));
});

afterAll(() => {
  session?.close();
  models?.cleanup();
});

const newDecoder = () =>
  new KvDecoder(session, signature.layout, signature.names, { maxPositions: smallThinker.maxPositions });

/** One step; returns logits [B, 1, V] (each row's last position). */
function step(decoder: KvDecoder, seqIds: string[], ids: number[][]): Float32Array {
  const s = ids[0].length;
  const embeds = new Float32Array(ids.length * s * D);
  ids.forEach((row, b) => embeds.set(embedder.embed(row), b * s * D));
  const out = decoder.run(seqIds, s, { inputs_embeds: new ort.Tensor('float32', embeds, [ids.length, s, D]) }, [
    'logits',
  ]);
  return out.logits.data as Float32Array;
}

/** The last position's logits of a full recompute of ids (one prefill of everything). */
function fullLogits(ids: number[]): Float32Array {
  return step(newDecoder(), ['full'], [ids]);
}

/** The logits at position p of ids: a full recompute of ids[0..p]. */
const logitsAt = (ids: number[], p: number) => fullLogits(ids.slice(0, p + 1));

describe('thinker KV cache', () => {
  it('decoding from the cache equals a full recompute, position by position', () => {
    const ids = promptIds(24, 1);
    const dec = newDecoder();
    const prefill = step(dec, ['a'], [ids.slice(0, 8)]);
    expect(prefill.length).toBe(V);
    expect(maxAbsDiff(prefill, logitsAt(ids, 7))).toBeLessThan(1e-4);
    for (let p = 8; p < ids.length; p++) {
      const logits = step(dec, ['a'], [[ids[p]]]);
      expect(maxAbsDiff(logits, logitsAt(ids, p))).toBeLessThan(1e-4);
    }
    expect(dec.pastLength('a')).toBe(24);
  });

  it('a left-padded batch of sequences with different pasts equals each one recomputed alone', () => {
    const a = promptIds(20, 2);
    const b = promptIds(9, 3);
    const c = promptIds(14, 4);
    const dec = newDecoder();
    step(dec, ['a'], [a.slice(0, 17)]);
    step(dec, ['b'], [b.slice(0, 6)]);
    step(dec, ['c'], [c.slice(0, 11)]);
    const texts = [a, b, c];
    for (let k = 0; k < 3; k++) {
      const batch = step(dec, ['a', 'b', 'c'], [[a[17 + k]], [b[6 + k]], [c[11 + k]]]);
      const positions = [17 + k, 6 + k, 11 + k];
      positions.forEach((p, i) => {
        expect(maxAbsDiff(batch.subarray(i * V, (i + 1) * V), logitsAt(texts[i], p))).toBeLessThan(1e-4);
      });
    }
    // Two new positions each, still left-padded on the past.
    const batch2 = step(
      dec,
      ['c', 'a'],
      [
        [5, 6],
        [7, 8],
      ],
    );
    expect(maxAbsDiff(batch2.subarray(0, V), fullLogits([...c.slice(0, 14), 5, 6]))).toBeLessThan(1e-4);
    expect(maxAbsDiff(batch2.subarray(V, 2 * V), fullLogits([...a.slice(0, 20), 7, 8]))).toBeLessThan(1e-4);
    // Back to decoding alone after batched steps (the cache leaves its grown buffers for exact ones).
    const aloneAgain = step(dec, ['b'], [[42]]);
    expect(maxAbsDiff(aloneAgain, fullLogits([...b, 42]))).toBeLessThan(1e-4);
  });

  it('frees a sequence and reports its KV bytes', () => {
    const dec = newDecoder();
    step(dec, ['x'], [promptIds(10, 5)]);
    // 2 (k, v) x layers x positions x hidden floats.
    const perPosition = 2 * smallThinker.numLayers * D * 4;
    expect(dec.kvBytes('x')).toBe(10 * perPosition);
    // In a batch, a row holds its left padding too: y (1 position) is padded to x's 11.
    step(dec, ['x', 'y'], [[1], [2]]);
    expect(dec.kvBytes('x')).toBe(11 * perPosition);
    expect(dec.kvBytes('y')).toBe(11 * perPosition);
    expect(dec.pastLength('y')).toBe(1);
    // x and y leave the batch of three without z: z gets a row of its own (no padding kept alive).
    step(dec, ['z'], [promptIds(3, 6)]);
    step(dec, ['x', 'y', 'z'], [[3], [4], [5]]);
    expect(dec.kvBytes('z')).toBe(12 * perPosition);
    step(dec, ['x', 'y'], [[6], [7]]);
    expect(dec.kvBytes('z')).toBe(4 * perPosition);
    const zNext = step(dec, ['z'], [[8]]);
    expect(maxAbsDiff(zNext, fullLogits([...promptIds(3, 6), 5, 8]))).toBeLessThan(1e-4);
    dec.free('x');
    expect(dec.kvBytes('x')).toBe(0);
    expect(dec.pastLength('x')).toBe(0);
  });
});
