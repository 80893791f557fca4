/**
 * The prefix cache's pure parts: block names (chained: equal names mean equal inputs from position 0; a media row or
 * the model key changes them), the store (longest match, an entry contained in a newer one is dropped, LRU under the
 * byte budget, owners), and the config's checks.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  blockNames,
  idBlockNames,
  rowBytes,
  tokenBlockNames,
  writeMediaKey,
  writeTokenId,
} from '../../src/sched/blockNames.ts';
import { checkPrefixBudget, PrefixCache, type CacheEntry } from '../../src/sched/PrefixCache.ts';
import { configProblems } from '../helpers/configProblems.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';

/** Names of blocks of `b` positions over token ids, with an optional row at some positions. */
function names(ids: number[], b: number, rows: Map<number, Float32Array | null> = new Map(), root = 'model') {
  return blockNames(root, b, ids.length, (hash, p) => {
    hash.update(Int32Array.of(ids[p]));
    const row = rows.get(p);
    if (row === null) return false;
    if (row) hash.update(rowBytes(row));
    return true;
  });
}

describe('blockNames', () => {
  it('names whole blocks only, chained: a change early renames every later block', () => {
    const a = names([1, 2, 3, 4, 5, 6, 7], 2);
    expect(a.names).toHaveLength(3); // position 6 is in no whole block
    expect(names([1, 2, 3, 4, 5, 6, 8], 2).names).toEqual(a.names);
    const early = names([9, 2, 3, 4, 5, 6, 7], 2).names;
    expect(early.every((n, k) => n !== a.names[k])).toBe(true);
    expect(names([1, 2, 3, 4], 2, new Map(), 'other model').names[0]).not.toBe(a.names[0]);
  });

  it('media rows are part of a name: same placeholders, other bytes, other names; a missing row stops the walk', () => {
    const ids = [1, 50, 50, 2];
    const image = Float32Array.of(0.5, 0.25);
    const other = Float32Array.of(0.5, 0.26);
    const a = names(ids, 2, new Map([[1, image]]));
    expect(names(ids, 2, new Map([[1, Float32Array.of(0.5, 0.25)]])).names).toEqual(a.names);
    const b = names(ids, 2, new Map([[1, other]]));
    expect(b.names[0]).not.toBe(a.names[0]);
    expect(b.names[1]).not.toBe(a.names[1]);
    const rowsSoFar = new Map([
      [1, image],
      [2, null],
    ]);
    expect(names(ids, 2, rowsSoFar)).toEqual({ names: [a.names[0]], stoppedAtUnknown: true });
  });

  it("main's names of a prompt are the Thinker's: token ids and keyed media written a position at a time", () => {
    // The Thinker's cache names position by position (ThinkerPrefixCache.namesOf); main's router names a whole block
    // of token ids in one go. The names must agree, or routing would never find a prefix the Thinker holds.
    const thinkers = (ids: number[], b: number, limit: number, key?: { start: number; length: number }) =>
      blockNames('model', b, Math.min(limit, ids.length), (hash, p) => {
        writeTokenId(hash, ids[p]);
        if (key && p >= key.start && p < key.start + key.length) writeMediaKey(hash, 'clip', p - key.start);
        return true;
      }).names;
    const ids = Array.from({ length: 53 }, (_, i) => (i * 7919) % 70_000); // ids past 16 bits too
    for (const [b, limit] of [
      [16, 53],
      [16, 52],
      [4, 13],
      [1, 5],
      [16, 200],
    ]) {
      const main = tokenBlockNames('model', b, ids, limit);
      expect(main).toEqual(thinkers(ids, b, limit));
      expect(main).toHaveLength(Math.floor(Math.min(limit, ids.length) / b));
    }
    const keyed = [{ start: 5, length: 20, blockKey: 'clip' }];
    expect(tokenBlockNames('model', 4, ids, 53, keyed)).toEqual(thinkers(ids, 4, 53, keyed[0]));
    expect(tokenBlockNames('model', 4, ids, 53, keyed)).not.toEqual(tokenBlockNames('model', 4, ids, 53));
  });

  it("a text sequence's names a block at a time are its names a position at a time, past its prompt too", () => {
    // The Thinker names a text-only request's blocks with idBlockNames (its prompt, then what it generated); with
    // media, position by position (rows and keys). Both must give one name to one prefix, and stop alike.
    const prompt = Array.from({ length: 37 }, (_, i) => (i * 104_729) % 151_000);
    const generated = [5, 70_001, 9, 11, 12];
    const positionwise = (limit: number, b: number) =>
      blockNames('model', b, limit, (hash, p) => {
        const id = p < prompt.length ? prompt[p] : generated[p - prompt.length];
        if (id === undefined) return false;
        writeTokenId(hash, id);
        return true;
      });
    for (const b of [1, 4, 16])
      for (const limit of [0, 3, 36, 37, 40, 42, 43, 48, 64]) {
        const fast = idBlockNames('model', b, prompt, generated, limit);
        expect(fast).toEqual(positionwise(limit, b));
        expect(idBlockNames('model', b, prompt, [], limit)).toEqual(
          blockNames('model', b, limit, (hash, p) => p < prompt.length && (writeTokenId(hash, prompt[p]), true)),
        );
      }
    expect(idBlockNames('model', 4, prompt, generated, 48).stoppedAtUnknown).toBe(true); // 42 known
    expect(idBlockNames('model', 4, prompt, generated, 40).stoppedAtUnknown).toBe(false);
  });
});

function entry(seqId: string, blocks: string[], bytes = 10, owner: string | null = null): CacheEntry<null> {
  return { seqId, blocks, bytes, owner, data: null };
}

describe('PrefixCache', () => {
  const chain = ['a', 'b', 'c', 'd'];

  it('finds the entry holding the most leading blocks; records hits and misses', () => {
    const freed: string[] = [];
    const cache = new PrefixCache<null>(4, 1000, (s) => freed.push(s));
    cache.insert(entry('one', ['a', 'b']));
    cache.insert(entry('branch', ['a', 'x', 'y']));
    expect(cache.lookup(chain)).toMatchObject({ entry: { seqId: 'one' }, blocks: 2 });
    expect(cache.lookup(['a', 'x', 'y', 'z'])).toMatchObject({ entry: { seqId: 'branch' }, blocks: 3 });
    expect(cache.lookup(['q'])).toBeNull();
    expect(cache.extendsBeyond(['a'], 1)).toBe(true);
    expect(cache.extendsBeyond(['a', 'b'], 2)).toBe(false);
    cache.record(8, 14);
    cache.record(0, 5);
    expect(cache.stats).toMatchObject({ reuses: 1, reusedTokens: 8, missedTokens: 11, retained: 2 });
    expect(freed).toEqual([]);
  });

  it('an entry contained in a newer one is freed (a conversation holds one entry), a branch is not', () => {
    const freed: string[] = [];
    const cache = new PrefixCache<null>(4, 1000, (s) => freed.push(s));
    cache.insert(entry('turn1', ['a', 'b']));
    cache.insert(entry('other', ['a', 'x']));
    cache.insert(entry('turn2', ['a', 'b', 'c']));
    expect(freed).toEqual(['turn1']);
    expect(cache.stats).toMatchObject({ retained: 2, retainedBytes: 20, evictions: 0 });
    expect(cache.lookup(['a', 'b'])).toMatchObject({ entry: { seqId: 'turn2' }, blocks: 2 });
  });

  it('evicts the least recently used past the byte budget; a lookup counts as a use', () => {
    const freed: string[] = [];
    const cache = new PrefixCache<null>(4, 25, (s) => freed.push(s));
    cache.insert(entry('e1', ['1']));
    cache.insert(entry('e2', ['2']));
    cache.lookup(['1']); // e1 is now the most recent
    cache.insert(entry('e3', ['3']));
    expect(freed).toEqual(['e2']);
    expect(cache.stats).toMatchObject({ retained: 2, retainedBytes: 20, evictions: 1 });
    cache.insert(entry('huge', ['h'], 100)); // larger than the whole budget: everything goes, itself too
    expect(cache.stats).toMatchObject({ retained: 0, retainedBytes: 0 });
    expect(freed).toContain('huge');
  });

  it('release frees an owner’s entries only; clear frees all; an empty entry is freed at once', () => {
    const freed: string[] = [];
    const cache = new PrefixCache<null>(4, 1000, (s) => freed.push(s));
    cache.insert(entry('mine', ['m'], 10, 'session'));
    cache.insert(entry('theirs', ['t']));
    expect(cache.owns('session')).toBe(true);
    cache.release('session');
    expect(freed).toEqual(['mine']);
    expect(cache.owns('session')).toBe(false);
    cache.insert(entry('nothing', []));
    expect(freed).toEqual(['mine', 'nothing']);
    cache.clear();
    expect(freed).toEqual(['mine', 'nothing', 'theirs']);
    expect(cache.stats.retainedBytes).toBe(0);
  });

  it('a budget that cannot hold one block is refused, naming the fix', () => {
    expect(() => checkPrefixBudget({ maxBytes: 1000, blockPositions: 16 }, 8192)).toThrow(
      /cannot hold one block .*prefix_cache: false/,
    );
    expect(() => checkPrefixBudget({ maxBytes: 16 * 8192, blockPositions: 16 }, 8192)).not.toThrow();
  });
});

describe('engine.prefix_cache in YAML', () => {
  const thinkerCache = 'prefix_cache: { max_bytes: 128MiB, block_positions: 16 }';
  const shipped = readFileSync(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml'), 'utf8');
  /** The problems of tiny-omni-text-in.yaml with textual edits. */
  const problems = (edits: Record<string, string>) =>
    configProblems(Object.entries(edits).reduce((text, [from, to]) => text.replace(from, to), shipped));

  it('refuses a budget below one block, a bad block size, and a cache on a stage that keeps no KV', () => {
    expect(problems({ [thinkerCache]: 'prefix_cache: { max_bytes: 1KiB }' })).toEqual([
      expect.stringMatching(/engine\.prefix_cache\.max_bytes: .*cannot hold one block/),
    ]);
    expect(problems({ [thinkerCache]: 'prefix_cache: { block_positions: 0 }' })).toEqual([
      expect.stringMatching(/block_positions/),
    ]);
    expect(problems({ [thinkerCache]: 'prefix_cache: { max_bytes: 64MiB, evict: lru }' })).toEqual([
      expect.stringMatching(/prefix_cache/),
    ]);
    expect(
      problems({
        'threads: 1 # 1 thread beat 2 for conv graphs on this machine':
          'threads: 1\n      prefix_cache: { max_bytes: 64MiB }',
      }),
    ).toEqual([expect.stringMatching(/only autoregressive stages/)]);
  });

  it('engine.prefill_first: on by default on the AR stages, false honoured, refused where nothing decodes', () => {
    const stages = (text: string) => parseConfig(text, 'configs/x.yaml', { cores: 64 }).stages;
    const ar = (text: string) => stages(text).filter((s) => s.workerType === 'ar');
    expect(ar(shipped).map((s) => s.engine.prefillFirst)).toEqual([undefined, undefined]);
    const off = shipped.replace(thinkerCache, `${thinkerCache}\n      prefill_first: false`);
    expect(stages(off).find((s) => s.kind === 'thinker')!.engine.prefillFirst).toBe(false);
    expect(
      problems({
        'threads: 1 # 1 thread beat 2 for conv graphs on this machine': 'threads: 1\n      prefill_first: true',
      }),
    ).toEqual([expect.stringMatching(/prefill_first: only autoregressive stages/)]);
  });

  it('engine.seat_turn_steps: 8 by default on the AR stages, false turns it off, refused where nothing decodes', () => {
    const stages = (text: string) => parseConfig(text, 'configs/x.yaml', { cores: 64 }).stages;
    const ar = (text: string) => stages(text).filter((s) => s.workerType === 'ar');
    expect(ar(shipped).map((s) => s.engine.seatTurnSteps)).toEqual([8, 8]);
    expect(stages(shipped).find((s) => s.workerType !== 'ar')!.engine.seatTurnSteps).toBeUndefined();
    const off = shipped.replace(thinkerCache, `${thinkerCache}\n      seat_turn_steps: false`);
    expect(stages(off).find((s) => s.kind === 'thinker')!.engine.seatTurnSteps).toBeNull();
    const four = shipped.replace(thinkerCache, `${thinkerCache}\n      seat_turn_steps: 4`);
    expect(stages(four).find((s) => s.kind === 'thinker')!.engine.seatTurnSteps).toBe(4);
    expect(
      problems({
        'threads: 1 # 1 thread beat 2 for conv graphs on this machine': 'threads: 1\n      seat_turn_steps: 4',
      }),
    ).toEqual([expect.stringMatching(/seat_turn_steps: only autoregressive stages/)]);
  });

  it('engine.long_prefill_token_threshold: off by default, honoured on the AR stages, refused elsewhere', () => {
    const stages = (text: string) => parseConfig(text, 'configs/x.yaml', { cores: 64 }).stages;
    const thinker = (text: string) => stages(text).find((s) => s.kind === 'thinker')!;
    expect(thinker(shipped).engine.longPrefillTokenThreshold).toBeUndefined();
    const capped = shipped.replace(thinkerCache, `${thinkerCache}\n      long_prefill_token_threshold: 256`);
    expect(thinker(capped).engine.longPrefillTokenThreshold).toBe(256);
    expect(
      problems({
        'threads: 1 # 1 thread beat 2 for conv graphs on this machine':
          'threads: 1\n      long_prefill_token_threshold: 64',
      }),
    ).toEqual([expect.stringMatching(/long_prefill_token_threshold: only autoregressive stages/)]);
    expect(problems({ [thinkerCache]: `${thinkerCache}\n      long_prefill_token_threshold: 0` })).toEqual([
      expect.stringMatching(/long_prefill_token_threshold/),
    ]);
  });

  it('engine.nice: a stage below the others by that many levels (none by default), 0-19', () => {
    const stages = (text: string) => parseConfig(text, 'configs/x.yaml', { cores: 64 }).stages;
    expect(stages(shipped).map((s) => s.engine.nice)).toEqual(stages(shipped).map(() => undefined));
    const below = shipped.replace(thinkerCache, `${thinkerCache}\n      nice: 5`);
    expect(stages(below).find((s) => s.kind === 'thinker')!.engine.nice).toBe(5);
    expect(problems({ [thinkerCache]: `${thinkerCache}\n      nice: 20` })).toEqual([
      expect.stringMatching(/engine\.nice/),
    ]);
  });
});
