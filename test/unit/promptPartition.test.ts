/**
 * A request's cache partition as the engine carries it (src/engine/promptPartition.ts): a digest of the salt on the
 * prompt and its media items, by which the EC store looks items up (ecPlan) and the prefix caches name blocks
 * (saltedRoot). Equal salts meet, other salts and no salt never do, and no salt changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { ecQueriesOf } from '../../src/engine/ec/ecPlan.ts';
import type { MediaItem, PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { inPartition, saltDigest } from '../../src/engine/promptPartition.ts';
import { modelRoot, saltedRoot, tokenBlockNames } from '../../src/sched/blockNames.ts';
import type { StageSpec } from '../../src/common/graph.ts';

/** One image item (its bytes are all the EC store's key reads of it), fresh objects each call as each request has. */
function prompt(bytes = [1, 2, 3]): PreparedPrompt {
  const item: MediaItem = {
    index: 0,
    modality: 'image',
    part: { type: 'image', data: new Uint8Array(bytes) },
    what: 'messages[0].content[0] (image)',
    numEmbeddings: 4,
    encoder: { stageId: 'image_encoder' } as StageSpec,
  };
  return { promptTokenIds: [5, 6, 7, 8, 9], items: [item], spans: [] };
}

const key = (p: PreparedPrompt) => ecQueriesOf(p)[0].bytesKey;

describe('prompt partition', () => {
  it('EC lookups: the same bytes meet within a salt only; no salt is the partition of before', () => {
    const a = key(inPartition(prompt(), 'tenant-a'));
    expect(key(inPartition(prompt(), 'tenant-a'))).toBe(a);
    expect(key(inPartition(prompt(), 'tenant-b'))).not.toBe(a);
    expect(key(prompt())).not.toBe(a);
    expect(key(inPartition(prompt(), undefined))).toBe(key(prompt()));
    expect(key(inPartition(prompt([1, 2, 4]), 'tenant-a'))).not.toBe(a); // other bytes: another item, as ever
  });

  it('carries a fixed-size digest, never the salt itself, on the prompt and every item', () => {
    const secret = 'a tenant secret '.repeat(40);
    const p = inPartition(prompt(), secret);
    expect(p.cacheSalt).toBe(saltDigest(secret));
    expect(p.cacheSalt).toHaveLength(22);
    expect(p.items.map((i) => i.cacheSalt)).toEqual([p.cacheSalt]);
    expect(JSON.stringify(p)).not.toContain('tenant secret');
    expect(inPartition(prompt(), undefined).cacheSalt).toBeUndefined();
  });

  it('block names: a salt renames every block of the chain; one salt names alike', () => {
    const root = modelRoot({ preset: 'tiny' });
    const ids = Array.from({ length: 12 }, (_, i) => i + 1);
    const names = (salt?: string) => tokenBlockNames(saltedRoot(root, salt), 4, ids, 12);
    expect(names('s1')).toEqual(names('s1'));
    const [plain, s1, s2] = [names(), names('s1'), names('s2')];
    expect(plain).toEqual(tokenBlockNames(root, 4, ids, 12));
    for (let k = 0; k < 3; k++) expect(new Set([plain[k], s1[k], s2[k]]).size).toBe(3);
  });
});
