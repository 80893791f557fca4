/**
 * The append-only KV signature (cache -> cache_new, AppendKvCache) against the Optimum one (past_key_values ->
 * present, SeqKvCache) on the same weights: every step of a mixed schedule — prefills, a steady batch past the
 * buffers' first doubling, a sequence joining and one leaving, prefix reuse through move(), different past
 * lengths in one batch — gives the same logits and hidden states, the same KV bytes, the same errors.
 */
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildThinker, THINKER_ACCEPT_OUTPUT } from '../../stages/generator/thinkerModel.ts';
import { ensureModel } from '../../stages/models/ensureModel.ts';
import { KvDecoder } from '../../stages/models/KvDecoder.ts';
import { SyncSession, sessionOptions } from '../../stages/models/SyncSession.ts';
import { loadTokenEmbedder, type TokenEmbedder } from '../../stages/thinker/TokenEmbedder.ts';
import { readThinkerSignature, type ThinkerSignature } from '../../stages/thinker/thinkerSignature.ts';
import { maxAbsDiff, promptIds, smallThinker, tempModelsDir, thinkerSpec } from './helpers.ts';

const D = smallThinker.hiddenSize;
const TOLERANCE = 1e-5;
let models: ReturnType<typeof tempModelsDir>;
let embedder: TokenEmbedder;
const sides: { session: SyncSession; signature: ThinkerSignature }[] = [];

beforeAll(async () => {
  models = tempModelsDir();
  const spec = thinkerSpec();
  const files = await ensureModel(spec, models.dir);
  embedder = loadTokenEmbedder(files.files['embed_tokens.onnx'], sessionOptions({ threads: 1 }));
  const optimum = await buildThinker(smallThinker, spec.seed, () => {}, 'optimum');
  const sources = { optimum: optimum.files['decoder_model.onnx'], append: files.files['decoder_model.onnx'] };
  for (const [name, source] of Object.entries(sources)) {
    const session = SyncSession.create(source, sessionOptions({ threads: 1 }), name);
    sides.push({ session, signature: readThinkerSignature(session, `${name}.onnx`) });
  }
});

afterAll(() => {
  for (const s of sides) s.session.close();
  models?.cleanup();
});

/** The two decoders, Optimum first, driven in lockstep. */
class Pair {
  readonly decoders = sides.map(
    ({ session, signature }) => new KvDecoder(session, signature.layout, signature.names, 64),
  );

  /** One step on both; asserts equal logits and hidden states and returns the largest difference seen. */
  step(seqIds: string[], ids: number[][]): number {
    const s = ids[0].length;
    const embeds = new Float32Array(ids.length * s * D);
    ids.forEach((row, b) => embeds.set(embedder.embed(row), b * s * D));
    const outs = this.decoders.map((dec) =>
      dec.run(seqIds, s, { inputs_embeds: new ort.Tensor('float32', embeds, [ids.length, s, D]) }, [
        'logits',
        THINKER_ACCEPT_OUTPUT,
      ]),
    );
    let worst = 0;
    for (const name of ['logits', THINKER_ACCEPT_OUTPUT]) {
      const [a, b] = outs.map((o) => o[name]);
      expect(b.dims).toEqual(a.dims);
      worst = Math.max(worst, maxAbsDiff(a.data as Float32Array, b.data as Float32Array));
    }
    expect(worst).toBeLessThan(TOLERANCE);
    for (const id of seqIds) this.expectSameState(id);
    return worst;
  }

  expectSameState(id: string): void {
    const [a, b] = this.decoders;
    expect(b.pastLength(id)).toBe(a.pastLength(id));
    expect(b.kvBytes(id)).toBe(a.kvBytes(id));
  }

  each(f: (dec: KvDecoder) => void): void {
    this.decoders.forEach(f);
  }
}

describe('append-only KV signature', () => {
  it('reads both signatures with the same layout', () => {
    const [optimum, append] = sides.map((s) => s.signature);
    expect(optimum.names.cacheLayout).toBe('optimum');
    expect(append.names.cacheLayout).toBe('append');
    expect(append.layout).toEqual(optimum.layout);
    expect(append.names.past[1]).toBe('cache.0.value');
    expect(append.names.present[2]).toBe('cache_new.1.key');
  });

  it('gives the Optimum layout outputs step for step across joins, leaves, regroups and prefix reuse', () => {
    const pair = new Pair();
    const a = promptIds(40, 1);
    const b = promptIds(40, 2);
    const c = promptIds(40, 3);
    // Prefills of different lengths, then a left-padded steady batch past the first capacity (16 -> 32 -> 64).
    pair.step(['a'], [a.slice(0, 9)]);
    pair.step(['b'], [b.slice(0, 3)]);
    for (let k = 0; k < 20; k++) pair.step(['a', 'b'], [[a[9 + k]], [b[3 + k]]]);
    // c joins (prefilled alone, then a batch of three), then runs two-token steps with a.
    pair.step(['c'], [c.slice(0, 5)]);
    for (let k = 0; k < 3; k++) pair.step(['a', 'b', 'c'], [[a[29 + k]], [b[23 + k]], [c[5 + k]]]);
    pair.step(['c', 'a'], [c.slice(8, 10), a.slice(32, 34)]);
    // b was left behind in the batch of three: it got a row of its own and carries on alone.
    pair.step(['b'], [[b[26]]]);
    // b leaves; a and c carry on in a new steady batch.
    pair.each((dec) => dec.free('b'));
    pair.expectSameState('b');
    for (let k = 0; k < 4; k++) pair.step(['a', 'c'], [[a[34 + k]], [c[10 + k]]]);
    // Prefix reuse: a's first 12 positions become d's, d diverges from there, beside c.
    pair.each((dec) => dec.move('a', 'd', 12));
    pair.expectSameState('a');
    pair.expectSameState('d');
    pair.step(['d'], [[7, 8, 9]]);
    for (let k = 0; k < 3; k++) pair.step(['c', 'd'], [[c[14 + k]], [100 + k]]);
    // Moving a whole sequence keeps all of it.
    pair.each((dec) => dec.move('c', 'e', 1000));
    for (let k = 0; k < 2; k++) pair.step(['d', 'e'], [[110 + k], [120 + k]]);
  });

  it('refuses a step past maxPositions on both layouts alike, leaving the caches usable', () => {
    const pair = new Pair();
    pair.step(['x'], [promptIds(60, 9)]);
    pair.each((dec) => {
      expect(() =>
        dec.run(['x'], 5, { inputs_embeds: new ort.Tensor('float32', new Float32Array(5 * D), [1, 5, D]) }, []),
      ).toThrow(/would reach 65 positions; the model supports 64/);
    });
    pair.step(['x'], [[1]]);
  });
});
