/**
 * The append-only KV signature (cache -> cache_new, AppendKvCache) against the Optimum one (past_key_values ->
 * present, SeqKvCache) on the same weights: every step of a mixed schedule — prefills, a steady batch past the
 * buffers' first doubling, sequences joining and leaving (rows moved alone or in blocks), prefix reuse through
 * move(), different past lengths in one batch — gives the same logits and hidden states, the same KV bytes, the
 * same errors. Stores recycle their buffers through a KvBufferPool without letting old keys through.
 */
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildThinker, THINKER_ACCEPT_OUTPUT } from '../../stages/thinker/thinkerModel.ts';
import { AppendKvCache } from '../../stages/models/AppendKvCache.ts';
import { KvBufferPool } from '../../stages/models/KvBufferPool.ts';
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
    ({ session, signature }) => new KvDecoder(session, signature.layout, signature.names, { maxPositions: 64 }),
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
    const text = { a: promptIds(64, 1), b: promptIds(64, 2), c: promptIds(64, 3) };
    const read = { a: 0, b: 0, c: 0 };
    /** The next n ids of each sequence's text. */
    const next = (id: keyof typeof text, n = 1) => text[id].slice(read[id], (read[id] += n));
    // Prefills of different lengths, then a left-padded steady batch through two doublings (16 -> 32 -> 64).
    pair.step(['a'], [next('a', 9)]);
    pair.step(['b'], [next('b', 3)]);
    for (let k = 0; k < 30; k++) pair.step(['a', 'b'], [next('a'), next('b')]);
    // c joins (prefilled alone, then a batch of three), then runs two-token steps with a.
    pair.step(['c'], [next('c', 5)]);
    for (let k = 0; k < 3; k++) pair.step(['a', 'b', 'c'], [next('a'), next('b'), next('c')]);
    pair.step(['c', 'a'], [next('c', 2), next('a', 2)]);
    // b was left behind in the batch of three: it got a row of its own and carries on alone.
    pair.step(['b'], [next('b')]);
    // b leaves; a and c carry on in a new steady batch.
    pair.each((dec) => dec.free('b'));
    pair.expectSameState('b');
    for (let k = 0; k < 4; k++) pair.step(['a', 'c'], [next('a'), next('c')]);
    // f joins at the end and leaves again: a and c (rows 0 and 1, different lengths) move on as one block.
    pair.step(['f'], [promptIds(4, 5)]);
    for (let k = 0; k < 2; k++) pair.step(['a', 'c', 'f'], [next('a'), next('c'), [130 + k]]);
    pair.each((dec) => dec.free('f'));
    for (let k = 0; k < 2; k++) pair.step(['a', 'c'], [next('a'), next('c')]);
    // Prefix reuse: a's first 12 positions become d's, d diverges from there, beside c.
    pair.each((dec) => dec.move('a', 'd', 12));
    pair.expectSameState('a');
    pair.expectSameState('d');
    pair.step(['d'], [[7, 8, 9]]);
    for (let k = 0; k < 3; k++) pair.step(['c', 'd'], [next('c'), [100 + k]]);
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

  it('appends a steady batch in place and feeds views of the same buffers, grown in place when it doubles', () => {
    const layout = { numLayers: 1, numKvHeads: 2, headDim: 3 };
    const pool = new KvBufferPool(1 << 20);
    const caches = [new AppendKvCache(layout, pool), new AppendKvCache(layout, pool)];
    const store = AppendKvCache.pack(caches, 1); // empty: capacity 16 positions, in buffers of 4 KiB
    const stride = 2 * 6; // batch x heads x headDim floats per position
    // A pool region is its slab and its offset (identity, not contents: a slab is 4 GiB of address space).
    const regionOf = (a: Float32Array) => ({ slab: a.buffer, offset: a.byteOffset });
    const sameRegion = (a: Float32Array, b: { slab: ArrayBufferLike; offset: number }) =>
      a.buffer === b.slab && a.byteOffset === b.offset;
    const regions = [regionOf(store.buffer(0)), regionOf(store.buffer(1))];
    const step = (value: number) => {
      store.append(
        [0, 1].map((i) => new Float32Array(stride).fill(100 * i + value)),
        1,
      );
      caches.forEach((c, b) => c.adopt(store, b, 1));
      expect(AppendKvCache.sameBatch(caches)).toBe(true);
      expect(sameRegion(store.view(0), regionOf(store.buffer(0)))).toBe(true);
    };
    for (let k = 0; k < 16; k++) step(k);
    expect(store.buffer(1).length).toBe(16 * stride);
    expect(Array.from(store.view(1).subarray(15 * stride, 15 * stride + 2))).toEqual([115, 115]);
    step(16); // the 17th position doubles the capacity, within the same 4 KiB
    expect(store.buffer(1).length).toBe(32 * stride);
    expect(sameRegion(store.buffer(1), regions[1])).toBe(true);
    expect(pool.bytes).toBe(0);
    for (let k = 17; k < 65; k++) step(k); // 65 positions need 128 x 48 bytes: the same buffers, grown in place
    expect(sameRegion(store.buffer(0), regions[0])).toBe(true);
    expect(store.buffer(0).length).toBe(128 * stride);
    expect(pool.bytes).toBe(0);
    expect(Array.from(store.view(0).subarray(0, 1))).toEqual([0]);
    expect(Array.from(store.view(0).subarray(64 * stride))).toEqual(new Array(stride).fill(64));
    // A different batch (one of the two alone) is not the same batch: it would be repacked.
    expect(AppendKvCache.sameBatch([caches[1]])).toBe(false);
  });

  it('hands its buffers back with the last row; a batch that takes them sees zeros where it has no keys', () => {
    const layout = { numLayers: 1, numKvHeads: 1, headDim: 2 };
    const pool = new KvBufferPool(1 << 20);
    const run = (caches: AppendKvCache[], positions: number, value: number) => {
      const store = AppendKvCache.sameBatch(caches) ? caches[0].storage! : AppendKvCache.pack(caches, positions);
      store.append(
        [0, 1].map(() => new Float32Array(positions * caches.length * 2).fill(value)),
        positions,
      );
      caches.forEach((c, b) => c.adopt(store, b, positions));
      return store;
    };
    const y = new AppendKvCache(layout, pool);
    run([y], 1, 7);
    // A batch whose keys went bad (NaN), then both of its sequences are dropped.
    const [a, b] = [new AppendKvCache(layout, pool), new AppendKvCache(layout, pool)];
    const bad = run([a, b], 5, NaN);
    const badRegions = [bad.buffer(0).byteOffset, bad.buffer(1).byteOffset]; // one pool: one slab
    a.release();
    expect(pool.bytes).toBe(0); // b still holds a row
    b.release();
    expect(pool.bytes).toBe(2 * 4096);
    // x is new: in the batch [y, x] its row is padding at y's one position, in the buffers the NaN batch left.
    const x = new AppendKvCache(layout, pool);
    const joined = AppendKvCache.pack([y, x], 1);
    expect(badRegions).toContain(joined.buffer(0).byteOffset);
    expect(pool.bytes).toBe(0);
    expect(Array.from(joined.view(0))).toEqual([7, 7, 0, 0]);
    expect(Array.from(joined.view(1))).toEqual([7, 7, 0, 0]);
    // y's own store goes back to the pool once y has moved into the batch.
    [y, x].forEach((c, i) => c.adopt(joined, i, 0));
    expect(pool.bytes).toBe(2 * 4096);
  });
});
