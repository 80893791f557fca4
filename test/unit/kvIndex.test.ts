/**
 * Main's index of what each Thinker instance's prefix cache holds (src/engine/routing/KvIndex.ts): a stats report
 * replaces an instance's set, a lost instance is forgotten, and a prompt's overlap with an instance is the leading
 * blocks it holds, named from token ids as the Thinker names them, up to the first media position.
 */
import { describe, expect, it } from 'vitest';
import { KvIndex, PREDICTION_MS } from '../../src/engine/routing/KvIndex.ts';
import { ROUTING_NAME_CHARS, saltedRoot, tokenBlockNames } from '../../src/sched/blockNames.ts';

const ROOT = '{"model":"tiny"}';
const B = 4;
const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i);
/** What a Thinker that computed `tokenIds` reports: its whole blocks' names, shortened. */
const held = (tokenIds: readonly number[], root = ROOT) => ({
  root,
  blockPositions: B,
  names: tokenBlockNames(root, B, tokenIds, tokenIds.length).map((n) => n.slice(0, ROUTING_NAME_CHARS)),
});

/** Overlaps with no prediction in force (the clock far from any request's end). */
const overlapsNow = (
  index: KvIndex,
  instances: string[],
  prompt: { tokenIds: number[]; namable: number; cacheSalt?: string },
) => index.overlaps(instances, prompt, 1e12);

describe('KvIndex', () => {
  it('overlap: the leading blocks an instance holds, never the prompt last position; others hold nothing', () => {
    const index = new KvIndex();
    index.update('thinker#0', held(ids(12))); // a turn of 12 tokens: 3 blocks
    const prompt = { tokenIds: [...ids(12), 50, 51, 52], namable: 15 };
    expect(overlapsNow(index, ['thinker#0', 'thinker#1'], prompt)).toEqual(
      new Map([
        ['thinker#0', 12],
        ['thinker#1', 0],
      ]),
    );
    // A prompt that is exactly the held turn: its last position is computed, so 2 whole blocks before it.
    expect(overlapsNow(index, ['thinker#0'], { tokenIds: ids(12), namable: 12 }).get('thinker#0')).toBe(8);
    // Another history: the first block differs, nothing matches even where later tokens agree.
    expect(overlapsNow(index, ['thinker#0'], { tokenIds: [99, ...ids(14, 2)], namable: 15 }).get('thinker#0')).toBe(0);
  });

  it("hashes a prompt's names as far as an instance holds them at its route, the rest when asked for", () => {
    const index = new KvIndex();
    index.update('thinker#0', held(ids(12))); // 3 blocks
    const naming = { root: ROOT, blockPositions: B };
    const shared = { tokenIds: [...ids(12), ...ids(20, 100)], namable: 32 }; // 8 blocks, the first 3 held
    expect(overlapsNow(index, ['thinker#0'], shared).get('thinker#0')).toBe(12);
    expect(index.names(shared, naming).hashed).toBe(4); // the 3 held and the first one not
    const stranger = { tokenIds: ids(32, 500), namable: 32 };
    expect(overlapsNow(index, ['thinker#0', 'thinker#1'], stranger).get('thinker#0')).toBe(0);
    expect(index.names(stranger, naming).hashed).toBe(1);
    // What the queue and the prediction read is the whole chain, as the Thinker names it.
    const whole = tokenBlockNames(ROOT, B, stranger.tokenIds, 32).map((n) => n.slice(0, ROUTING_NAME_CHARS));
    expect(index.names(stranger, naming).all()).toEqual(whole);
    expect(index.names(stranger, naming).at(7)).toBe(whole[7]);
    expect(() => index.names(stranger, naming).at(8)).toThrow(RangeError);
  });

  it('names no further than the first media position, each instance with its own root and block size', () => {
    const index = new KvIndex();
    index.update('thinker#0', held(ids(12)));
    expect(overlapsNow(index, ['thinker#0'], { tokenIds: ids(16), namable: 6 }).get('thinker#0')).toBe(4);
    const other = '{"model":"other"}';
    const twos = tokenBlockNames(other, 2, ids(6), 6).map((n) => n.slice(0, ROUTING_NAME_CHARS));
    index.update('thinker#1', { root: other, blockPositions: 2, names: twos });
    expect(overlapsNow(index, ['thinker#0', 'thinker#1'], { tokenIds: ids(16), namable: 16 })).toEqual(
      new Map([
        ['thinker#0', 12],
        ['thinker#1', 6],
      ]),
    );
    // Names made under another root than the one reported never match.
    index.update('thinker#1', { root: ROOT, blockPositions: 2, names: twos });
    expect(overlapsNow(index, ['thinker#1'], { tokenIds: ids(16), namable: 16 }).get('thinker#1')).toBe(0);
  });

  it('names a salted prompt as a Thinker names it under that salt: other salts, and none, hold nothing of it', () => {
    const index = new KvIndex();
    // The Thinker names a salted request's blocks from the salted root and reports them under its plain root.
    const salted = held(ids(12), saltedRoot(ROOT, 'tenant-a'));
    index.update('thinker#0', { ...salted, root: ROOT });
    const prompt = (cacheSalt?: string) => ({ tokenIds: ids(13), namable: 13, ...(cacheSalt ? { cacheSalt } : {}) });
    expect(overlapsNow(index, ['thinker#0'], prompt('tenant-a')).get('thinker#0')).toBe(12);
    expect(overlapsNow(index, ['thinker#0'], prompt('tenant-b')).get('thinker#0')).toBe(0);
    expect(overlapsNow(index, ['thinker#0'], prompt()).get('thinker#0')).toBe(0);
    // And a prediction made for a salted request's end counts for that salt only.
    const predicting = new KvIndex();
    predicting.predict('thinker#1', prompt('tenant-a'), 0, { root: ROOT, blockPositions: B });
    expect(predicting.overlaps(['thinker#1'], prompt('tenant-a'), 1).get('thinker#1')).toBe(12);
    expect(predicting.overlaps(['thinker#1'], prompt('tenant-b'), 1).get('thinker#1')).toBe(0);
    expect(saltedRoot(ROOT, undefined)).toBe(ROOT); // no salt: the names of before salts existed
  });

  it('a report replaces the set (an evicted block is gone); a lost instance is forgotten', () => {
    const index = new KvIndex();
    index.update('thinker#0', held(ids(12)));
    index.update('thinker#0', held(ids(4))); // the cache evicted the conversation, kept its first block
    expect(overlapsNow(index, ['thinker#0'], { tokenIds: ids(16), namable: 16 }).get('thinker#0')).toBe(4);
    index.forget('thinker#0');
    expect(index.size).toBe(0);
    index.update('thinker#1', held(ids(8)));
    index.update('thinker#1', undefined); // a report without a cache section
    expect(index.size).toBe(0);
  });

  it('predicts: a prompt that ended on an instance counts as held there until reports can say so', () => {
    const index = new KvIndex();
    const naming = { root: ROOT, blockPositions: B };
    const turn = { tokenIds: ids(20), namable: 20 };
    const next = { tokenIds: [...ids(20), 77, 78], namable: 22 };
    index.predict('thinker#0', turn, 0, naming); // before its first report: named as the stage's cache names
    expect(index.overlaps(['thinker#0'], next, 500).get('thinker#0')).toBe(20);
    index.update('thinker#0', held(ids(4))); // a report made before that request ended: the prediction stands
    expect(index.overlaps(['thinker#0'], next, 900).get('thinker#0')).toBe(20);
    expect(index.overlaps(['thinker#0'], next, PREDICTION_MS + 1).get('thinker#0')).toBe(4); // expired
    index.predict('thinker#0', turn, 2000, naming);
    // Named otherwise now (another model): the predictions made the old way go, what it reports stays.
    index.update('thinker#0', held(ids(4), '{"model":"reloaded"}'));
    expect(index.overlaps(['thinker#0'], next, 2001).get('thinker#0')).toBe(4);
  });

  it('predicts for the configured window (kv_prediction_ms); 0 trusts reports only', () => {
    const naming = { root: ROOT, blockPositions: B };
    const turn = { tokenIds: ids(20), namable: 20 };
    const next = { tokenIds: [...ids(20), 77, 78], namable: 22 };
    const long = new KvIndex(60_000);
    long.predict('thinker#0', turn, 0, naming);
    expect(long.overlaps(['thinker#0'], next, PREDICTION_MS + 1).get('thinker#0')).toBe(20);
    expect(long.overlaps(['thinker#0'], next, 60_001).get('thinker#0') ?? 0).toBe(0);
    const none = new KvIndex(0);
    none.predict('thinker#0', turn, 0, naming);
    expect(none.overlaps(['thinker#0'], next, 0).get('thinker#0') ?? 0).toBe(0);
  });
});
