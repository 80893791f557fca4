/**
 * The Thinker's prefix cache through ThinkerCore with a fake runner that tracks each sequence's KV length: every
 * request that ends leaves the KV of its computed positions in the cache; a later request starts at the longest
 * cached prefix whose inputs (token ids, media rows bit for bit) are its own, in whole blocks, and reports those
 * positions as cached. Voice turns: a prefill-only request computes its prompt and samples nothing, a request of the
 * same key waits for a producer still computing, and release_prefix frees the key's entries.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { buildPositionMap } from '../../src/media/positionMap.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { thinkerStatsOf, type ThinkerArgs } from '../../stages/thinker/protocol.ts';
import { releasePrefixMessage } from '../../stages/requestEvents.ts';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { configWith } from '../helpers/engine.ts';
import { deliverKind, FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const D = KvLengthRunner.hiddenSize;
const AUD = 261;

const THINKER_CACHE = 'prefix_cache: { max_bytes: 128MiB, block_positions: 16 }';
/** tiny-omni's Thinker with a cache of `blockPositions`-position blocks (1: matched position by position). */
const specWith = (
  blockPositions: number,
  cache = `prefix_cache: { max_bytes: 1MiB, block_positions: ${blockPositions} }`,
) => configWith('tiny-omni.yaml', { [THINKER_CACHE]: cache }).stages.find((s) => s.kind === 'thinker')!;
const spec = specWith(1);
const audio = { instance: 'audio-encoder#0', stageId: 'audio-encoder' };

/** [1 2 3] <audio x n> [4 5]: a user turn of n audio rows inside a fixed template. */
function turn(numRows: number) {
  return buildPositionMap([1, 2, 3, AUD, 4, 5], new Map([[AUD, 'audio']] as const), [
    { modality: 'audio', numEmbeddings: numRows },
  ]);
}

const rowsOf = (n: number, base = 1000) => Float32Array.from({ length: n * D }, (_, i) => base + i);

function setup(stage = spec) {
  const adapter = new FakeAdapter();
  const runner = new KvLengthRunner();
  const core = new ThinkerCore(stageContext(stage, adapter), runner);
  const add = (requestId: string, numRows: number, prefix: ThinkerArgs['prefix'], maxTokens = 2) => {
    const map = turn(numRows);
    core.add({
      type: 'add',
      requestId,
      sampling: { ...spec.defaultSamplingParams, maxTokens, ignoreEos: true },
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [audio],
      args: {
        promptTokenIds: map.tokenIds,
        media: {
          spans: map.spans,
          items: [{ modality: 'audio', numEmbeddings: numRows, what: 'audio', from: audio, onFailure: 'fail' }],
        },
        ...(prefix ? { prefix } : {}),
      },
      firstChunkDeadline: Date.now() + 30_000,
    });
  };
  const rows = (requestId: string, data: Float32Array) =>
    core.onArrivals([
      {
        requestId,
        chunk: received(requestId, audio.stageId, 'thinker', {
          kind: 'encoderRows',
          item: 0,
          rows: data,
          numRows: data.length / D,
          width: D,
        }),
      },
    ]);
  const run = () => {
    while (core.step());
  };
  const final = (requestId: string) => adapter.sent.find((c) => c.requestId === requestId && c.final);
  return { adapter, runner, core, add, rows, run, final };
}

beforeEach(() => resetSeqs());

describe('ThinkerCore prompt prefixes', () => {
  it('a prefill-only request retains its KV; the answer starts past the shared rows and reports them cached', () => {
    const { runner, core, add, rows, run, final } = setup();
    const all = rowsOf(10); // the whole turn: 10 rows; 6 of them were heard (and final) before the end
    const early = rowsOf(8);
    early.fill(-1, 6 * D); // the last 2 rows of the partial clip differ from the final ones
    add('p1', 8, { key: 'sess', prefillOnly: true });
    rows('p1', early);
    run();
    expect(final('p1')).toMatchObject({ finishReason: 'stop', body: { kind: 'text', tokenIds: [] } });
    expect(runner.steps.filter((s) => s.seqId === 'p1').every((s) => !s.sample)).toBe(true);
    expect([...runner.kv.entries()]).toEqual([[expect.stringMatching(/^prefix /), 13]]); // 3 + 8 rows + 2
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 1, reuses: 0 });

    add('answer', 10, { key: 'sess' });
    expect(core.step()).toBe(false); // held until its rows can be compared
    rows('answer', all);
    const before = runner.steps.length;
    run();
    // 3 text positions + 6 equal rows were reused: the answer computed from position 9 on.
    expect(runner.steps[before]).toMatchObject({ seqId: 'answer', numTokens: 6, sample: true });
    expect(final('answer')?.body).toMatchObject({ kind: 'text', cachedTokens: 9 });
    // The answer's own positions (15 of prompt, 1 token fed) are cached too; the prefill's diverge at 9: both stay.
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 2, reuses: 1, reusedTokens: 9 });
    expect([...runner.kv.values()].sort((a, b) => a - b)).toEqual([13, 16]);
    deliverKind(core, releasePrefixMessage('sess')); // the session ends: its entries go
    expect(runner.kv.size).toBe(0);
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 0, retainedBytes: 0 });
  });

  it('a request arriving while the prefill runs waits for it; a second prefill continues the first', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('p1', 4, { key: 'k', prefillOnly: true });
    add('p2', 8, { key: 'k', prefillOnly: true }); // waits for p1's result
    add('answer', 8, { key: 'k' }); // waits for p2
    rows('p2', rowsOf(8));
    rows('answer', rowsOf(8));
    while (core.step()); // p1 prefills its text while its rows encode; the others wait for it
    expect(runner.steps.map((s) => s.seqId)).toEqual(['p1']);
    rows('p1', rowsOf(4));
    run();
    expect(final('p2')?.body).toMatchObject({ cachedTokens: 7 }); // 3 text + 4 rows from p1
    expect(final('answer')?.body).toMatchObject({ cachedTokens: 12 }); // all but the last position
    // p2's 13 positions are in the answer's 14 (one entry for both); p1's 9 end with the template after its 4 rows,
    // where the others have rows 5 and 6: it stays beside them.
    expect([...runner.kv.values()]).toEqual([9, 14]);
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 2, reuses: 2, reusedTokens: 19 });
  });

  it('release_prefix frees the key; a waiter wakes when its producer is aborted, with what it computed', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('p1', 4, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(4));
    run();
    expect(runner.kv.size).toBe(1);
    deliverKind(core, releasePrefixMessage('k'));
    expect(runner.kv.size).toBe(0);
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 0, retainedBytes: 0 });

    add('p2', 4, { key: 'k', prefillOnly: true });
    add('answer', 4, { key: 'k' });
    rows('answer', rowsOf(4));
    while (core.step()); // p2 prefills its text; the answer waits for p2
    expect(runner.steps.some((s) => s.seqId === 'answer')).toBe(false);
    core.abort('p2'); // its 3 text positions (computed before its rows) go into the cache
    run();
    expect(final('answer')?.body).toMatchObject({ cachedTokens: 3 });
    deliverKind(core, releasePrefixMessage('k'));
    expect(runner.kv.size).toBe(0);
  });

  it('a cancelled answer leaves what it computed: the next request with the key reuses it', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('p1', 6, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(6));
    run();
    // A held (speculative) answer takes the prefix and decodes past it, then the user speaks on: it is aborted.
    add('held', 8, { key: 'k' }, 50);
    rows('held', rowsOf(8));
    core.step();
    core.step();
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ retained: 1, reuses: 1, reusedTokens: 9 });
    core.abort('held');
    // Its 13 prompt positions and one fed token, beside p1's 11 (whose template follows 6 rows, not 8).
    expect([...runner.kv.values()]).toEqual([11, 14]);
    // The next answer (the turn grew to 10 rows) starts past the 8 rows the cancelled one had.
    add('answer', 10, { key: 'k' });
    rows('answer', rowsOf(10));
    run();
    expect(final('answer')?.body).toMatchObject({ cachedTokens: 11 });

    // Aborted before its rows arrived (the match not settled): the prefix goes back untouched.
    add('p2', 4, { key: 'k2', prefillOnly: true });
    rows('p2', rowsOf(4));
    run();
    add('early', 6, { key: 'k2' });
    core.step(); // held: its rows are not here, and the key's entry goes further than its text
    expect(runner.steps.some((s) => s.seqId === 'early')).toBe(false);
    core.abort('early');
    add('later', 6, { key: 'k2' });
    rows('later', rowsOf(6));
    run();
    // Inputs decide, not keys: key k's first prefill had these very 6 rows and template (all but the last position).
    expect(final('later')?.body).toMatchObject({ cachedTokens: 10 });
  });

  it('other media rows behind the same placeholder tokens: only the text before them is reused', () => {
    const { runner, add, rows, run, final } = setup();
    add('p1', 4, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(4, 5000));
    run();
    add('other', 4, { key: 'k' });
    rows('other', rowsOf(4));
    run();
    expect(final('other')?.body).toMatchObject({ cachedTokens: 3 }); // the text before the audio only
    expect(runner.kv.size).toBe(2); // both stay: they share 3 positions, neither holds the other
  });

  it('media inside the first block: a request without a key waits for its rows when the cache has entries', () => {
    const { core, add, rows, run, final } = setup(specWith(16));
    add('first', 20, undefined); // 3 + 20 audio rows + 2: the audio starts inside block 0
    rows('first', rowsOf(20));
    run();
    add('again', 20, undefined); // the same turn again, as a chat client resends it
    expect(core.step()).toBe(false); // it cannot name block 0 yet, and an entry may begin with it
    rows('again', rowsOf(20));
    run();
    expect(final('again')?.body).toMatchObject({ cachedTokens: 16 });
  });
});

describe('ThinkerCore prefixes of running requests', () => {
  it('requests sent together under one prefix: one computes it, the others wait and copy it from its sequence', () => {
    const { adapter, runner, core, add, rows, run, final } = setup(
      specWith(4, 'prefix_cache: { max_bytes: 1MiB, block_positions: 4 }'),
    );
    const shared = rowsOf(12);
    add('a', 12, undefined, 3);
    rows('a', shared);
    add('b', 12, undefined, 3);
    rows('b', shared);
    add('c', 12, undefined, 3);
    rows('c', shared);
    // a's first step: its whole prompt (17 positions); b and c wait for its 4 whole blocks (16 positions).
    expect(core.step()).toBe(true);
    expect(runner.steps.map((x) => [x.seqId, x.numTokens])).toEqual([['a', 17]]);
    run();
    // b and c copied a's 16 positions while a was still answering (a's KV stayed a's: it answered on).
    for (const id of ['b', 'c']) {
      expect(runner.steps.find((x) => x.seqId === id)).toMatchObject({ numTokens: 1, sample: true });
      expect(final(id)?.body).toMatchObject({ kind: 'text', cachedTokens: 16 });
    }
    expect(final('a')?.body).not.toHaveProperty('cachedTokens');
    const tokens = (id: string) =>
      adapter.sent.filter((c) => c.requestId === id).flatMap((c) => (c.body?.kind === 'text' ? c.body.tokenIds : []));
    expect(tokens('a')).toHaveLength(3);
    expect(tokens('b')).toEqual(tokens('a'));
    expect(tokens('c')).toEqual(tokens('a'));
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ reuses: 2, reusedTokens: 32 });
  });

  it('a waiter whose source is cancelled before computing the blocks computes them itself', () => {
    const { runner, core, add, rows, run, final } = setup(
      specWith(4, 'prefix_cache: { max_bytes: 1MiB, block_positions: 4 }'),
    );
    add('a', 12, undefined, 3);
    rows('a', rowsOf(12));
    add('b', 12, undefined, 3);
    rows('b', rowsOf(12)); // waits for a, which has computed nothing yet
    core.abort('a');
    run();
    expect(runner.steps.map((x) => [x.seqId, x.numTokens])[0]).toEqual(['b', 17]);
    expect(final('b')?.body).not.toHaveProperty('cachedTokens');
  });
});

describe('ArScheduler.startAt', () => {
  it('a request given a computed prefix starts there and counts its KV at admission', () => {
    const s = new ArScheduler({ maxNumSeqs: 4, maxNumBatchedTokens: 100, kvBytesPerToken: 1, kvBudgetBytes: 20 });
    s.add('a', 12);
    s.startAt('a', 10);
    const plan = s.schedule();
    expect(plan.items).toEqual([{ requestId: 'a', startPosition: 10, numTokens: 2, sample: true }]);
    s.update(plan);
    s.add('b', 12);
    s.startAt('b', 10);
    expect(s.schedule().items).toEqual([]); // 12 + 10 + 2 positions would exceed the 20-position budget
    expect(() => s.startAt('a', 3)).toThrow(/has run/);
  });
});
