/**
 * Prompt prefixes retained by the Thinker for reuse (voice turns prefilled while the user speaks), through
 * ThinkerCore with a fake runner that tracks each sequence's KV length: a prefill-only request computes its prompt,
 * samples nothing and leaves its KV under its key; the next request with the key starts at the longest prefix whose
 * inputs (token ids, media rows bit for bit) are its own, waits for a producer still computing, and reports the
 * reused positions; releases, aborts and mismatches free everything.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { buildPositionMap } from '../../stages/encoders/positionMap.ts';
import { ThinkerCore } from '../../src/kinds/thinker/ThinkerCore.ts';
import { matchPrefix } from '../../src/kinds/thinker/ThinkerPrefixes.ts';
import type { AddRequest } from '../../src/worker/messages.ts';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const D = KvLengthRunner.hiddenSize;
const AUD = 261;

const graph = configWith('tiny-omni.yaml');
const spec = graph.stages.find((s) => s.kind === 'thinker')!;
const audio = { instance: 'audio-encoder#0', stageId: 'audio-encoder' };

/** [1 2 3] <audio x n> [4 5]: a user turn of n audio rows inside a fixed template. */
function turn(numRows: number) {
  return buildPositionMap([1, 2, 3, AUD, 4, 5], new Map([[AUD, 'audio']] as const), [
    { modality: 'audio', numEmbeddings: numRows },
  ]);
}

const rowsOf = (n: number, base = 1000) => Float32Array.from({ length: n * D }, (_, i) => base + i);

function setup() {
  const adapter = new FakeAdapter();
  const runner = new KvLengthRunner();
  const core = new ThinkerCore(stageContext(spec, adapter), runner);
  const add = (requestId: string, numRows: number, prefix: AddRequest['prefix'], maxTokens = 2) => {
    const map = turn(numRows);
    core.add({
      type: 'add',
      requestId,
      promptTokenIds: map.tokenIds,
      sampling: { ...spec.defaultSamplingParams, maxTokens, ignoreEos: true },
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [audio],
      media: {
        spans: map.spans,
        items: [{ modality: 'audio', numEmbeddings: numRows, what: 'audio', from: audio, onFailure: 'fail' }],
      },
      ...(prefix ? { prefix } : {}),
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

describe('matchPrefix', () => {
  const text = (ids: number[]) => ({ tokenIds: ids, mediaRow: () => undefined });
  it('stops at the first differing token, or at a media row that differs or has not arrived', () => {
    expect(matchPrefix(text([1, 2, 3, 4]), text([1, 2, 9, 4]), 10)).toEqual({ length: 2, settled: true });
    expect(matchPrefix(text([1, 2, 3]), text([1, 2, 3, 4]), 10)).toEqual({ length: 3, settled: true });
    expect(matchPrefix(text([1, 2, 3, 4]), text([1, 2, 3, 4]), 3)).toEqual({ length: 3, settled: true });
    const rowsA = rowsOf(3);
    const rowsB = rowsOf(3);
    rowsB[2 * D + 1] += 0.001; // one float of the third row
    const media = (rows: Float32Array | null) => ({
      tokenIds: [1, AUD, AUD, AUD, 2],
      mediaRow: (p: number) => (p >= 1 && p < 4 ? (rows ? rows.subarray((p - 1) * D, p * D) : null) : undefined),
    });
    expect(matchPrefix(media(rowsA), media(rowsB), 10)).toEqual({ length: 3, settled: true });
    expect(matchPrefix(media(rowsA), media(null), 10)).toEqual({ length: 1, settled: false });
    expect(matchPrefix(media(rowsA), media(rowsOf(3)), 10)).toEqual({ length: 5, settled: true });
  });
});

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
    expect([...runner.kv.keys()]).toEqual([expect.stringMatching(/^prefix sess /)]);
    expect(core.stats().prefix).toMatchObject({ retained: 1, reuses: 0 });

    add('answer', 10, { key: 'sess' });
    expect(core.step()).toBe(false); // held until its rows can be compared
    rows('answer', all);
    const before = runner.steps.length;
    run();
    // 3 text positions + 6 equal rows were reused: the answer computed from position 9 on.
    expect(runner.steps[before]).toMatchObject({ seqId: 'answer', numTokens: 6, sample: true });
    expect(final('answer')?.body).toMatchObject({ kind: 'text', cachedTokens: 9 });
    expect(core.stats().prefix).toMatchObject({ retained: 0, reuses: 1, reusedTokens: 9 });
    expect(runner.kv.size).toBe(0);
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
    expect(runner.kv.size).toBe(0);
    expect(core.stats().prefix).toMatchObject({ retained: 0, reuses: 2, reusedTokens: 19 });
  });

  it('release_prefix and an aborted producer free the KV; a waiting request then starts from 0', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('p1', 4, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(4));
    run();
    expect(runner.kv.size).toBe(1);
    core.releasePrefix('k');
    expect(runner.kv.size).toBe(0);
    expect(core.stats().prefix).toMatchObject({ retained: 0, retainedBytes: 0 });

    add('p2', 4, { key: 'k', prefillOnly: true });
    add('answer', 4, { key: 'k' });
    rows('answer', rowsOf(4));
    while (core.step()); // p2 prefills its text; the answer waits for p2
    expect(runner.steps.some((s) => s.seqId === 'answer')).toBe(false);
    core.abort('p2');
    run();
    expect(final('answer')?.body).not.toHaveProperty('cachedTokens');
    expect(runner.kv.size).toBe(0);
  });

  it('a cancelled answer gives back the prefix it took: the next request with the key reuses it', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('p1', 6, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(6));
    run();
    // A held (speculative) answer takes the prefix and decodes past it, then the user speaks on: it is aborted.
    add('held', 8, { key: 'k' }, 50);
    rows('held', rowsOf(8));
    core.step();
    core.step();
    expect(core.stats().prefix).toMatchObject({ retained: 0, reuses: 1, reusedTokens: 9 });
    core.abort('held');
    expect(core.stats().prefix).toMatchObject({ retained: 1 });
    expect([...runner.kv.entries()]).toEqual([[expect.stringMatching(/^prefix k /), 9]]); // its first 9 positions
    // The next answer (the turn grew to 10 rows) starts where the first prefill got to.
    add('answer', 10, { key: 'k' });
    rows('answer', rowsOf(10));
    run();
    expect(final('answer')?.body).toMatchObject({ cachedTokens: 9 });
    expect(runner.kv.size).toBe(0);

    // Aborted before its rows arrived (the match not settled): the prefix goes back untouched.
    add('p2', 4, { key: 'k2', prefillOnly: true });
    rows('p2', rowsOf(4));
    run();
    add('early', 6, { key: 'k2' });
    core.step();
    core.abort('early');
    expect(core.stats().prefix).toMatchObject({ retained: 1 });
    add('later', 6, { key: 'k2' });
    rows('later', rowsOf(6));
    run();
    expect(final('later')?.body).toMatchObject({ cachedTokens: 7 });
  });

  it('nothing in common: the retained KV is freed and the request computes everything', () => {
    const { runner, add, rows, run, final } = setup();
    add('p1', 4, { key: 'k', prefillOnly: true });
    rows('p1', rowsOf(4, 5000));
    run();
    add('other', 4, { key: 'k' });
    rows('other', rowsOf(4));
    run();
    expect(final('other')?.body).toMatchObject({ cachedTokens: 3 }); // the text before the audio only
    expect(runner.kv.size).toBe(0);
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
