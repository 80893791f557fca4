/**
 * A video's positions in the prefix cache are named by its block key and offset, not its rows: a second question
 * about the same clip adopts the clip's KV before (and without) its rows, and still answers; another clip behind the
 * same placeholder tokens, even with equal rows, matches only the text before it; main's KV index names the same
 * blocks from the key alone, so it routes the second question to the Thinker holding the clip.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { buildPositionMap } from '../../src/media/positionMap.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { thinkerStatsOf } from '../../stages/thinker/protocol.ts';
import { KvIndex } from '../../src/engine/routing/KvIndex.ts';
import { modelRoot } from '../../src/sched/blockNames.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner, textAdd } from '../helpers/fakeThinkerRunner.ts';

const D = KvLengthRunner.hiddenSize;
const VID = 267;
const B = 4;
const cache = `prefix_cache: { max_bytes: 1MiB, block_positions: ${B} }`;
const THINKER_CACHE = 'prefix_cache: { max_bytes: 128MiB, block_positions: 16 }';
const thinkerOf = (edits: Record<string, string>) =>
  configWith('tiny-omni.yaml', edits).stages.find((s) => s.kind === 'thinker')!;
const spec = thinkerOf({ [THINKER_CACHE]: cache });
const vision = { instance: 'image-encoder#0', stageId: 'image-encoder' };
const grid = { t: 2, h: 2, w: 3 }; // 12 rows

/** [1 2 3] <video x 12> [4 5 question]: a question about a clip. */
function question(q: number) {
  return buildPositionMap([1, 2, 3, VID, 4, 5, q], new Map([[VID, 'video']] as const), [
    { modality: 'video', numEmbeddings: 12, grid },
  ]);
}

const rowsOf = (n: number) => Float32Array.from({ length: n * D }, (_, i) => 1000 + i);

function setup(stage = spec) {
  const adapter = new FakeAdapter();
  const runner = new KvLengthRunner();
  const core = new ThinkerCore(stageContext(stage, adapter), runner);
  const addText = (requestId: string) => core.add(textAdd(spec, requestId, [9, 8, 7]));
  const add = (requestId: string, q: number, blockKey: string) => {
    const map = question(q);
    core.add({
      type: 'add',
      requestId,
      sampling: { ...spec.defaultSamplingParams, maxTokens: 2, ignoreEos: true },
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [vision],
      args: {
        promptTokenIds: map.tokenIds,
        media: {
          spans: map.spans,
          items: [{ modality: 'video', numEmbeddings: 12, what: 'video', from: vision, onFailure: 'fail', blockKey }],
        },
      },
      firstChunkDeadline: Date.now() + 30_000,
    });
    return map;
  };
  const rows = (requestId: string) =>
    core.onArrivals([
      {
        requestId,
        chunk: received(requestId, vision.stageId, 'thinker', {
          kind: 'encoderRows',
          item: 0,
          rows: rowsOf(12),
          numRows: 12,
          width: D,
        }),
      },
    ]);
  const run = () => {
    while (core.step());
  };
  const final = (requestId: string) => adapter.sent.find((c) => c.requestId === requestId && c.final);
  return { runner, core, add, addText, rows, run, final };
}

beforeEach(() => resetSeqs());

describe('video blocks named by the clip key', () => {
  it('a second question about the clip adopts its KV and answers before its rows come', () => {
    const { runner, core, add, rows, run, final } = setup();
    add('first', 6, 'clip-a');
    expect(core.step()).toBe(true); // the 3 text positions before the clip
    run();
    expect(final('first')).toBeUndefined(); // waits at the clip for its rows
    rows('first');
    run();
    expect(final('first')).toMatchObject({ finishReason: 'length' });

    add('second', 7, 'clip-a'); // another question; its rows are never delivered
    run();
    // 3 + 12 clip + 2 template = 17 positions shared: 4 whole blocks of 4 adopted, the rest computed.
    expect(final('second')).toMatchObject({ finishReason: 'length', body: { cachedTokens: 16 } });
    expect(runner.steps.filter((s) => s.seqId === 'second')[0]).toMatchObject({ numTokens: 2, tokenIds: [5, 7] });
  });

  it('another clip behind the same placeholders (equal rows even) reuses only the text before it', () => {
    const { core, add, rows, run, final } = setup();
    add('first', 6, 'clip-a');
    rows('first');
    run();
    add('other', 6, 'clip-b');
    run();
    expect(final('other')).toBeUndefined(); // its clip is not in the cache: it waits for its rows
    rows('other');
    run();
    expect(final('other')).toMatchObject({ finishReason: 'length' });
    expect(final('other')?.body).not.toHaveProperty('cachedTokens'); // 3 text positions: no whole block
    expect(thinkerStatsOf(core.stats()).prefix).toMatchObject({ reuses: 0 });
  });

  it("main's KV index names the clip's blocks as the Thinker holds them", () => {
    const { core, add, rows, run } = setup();
    const map = add('first', 6, 'clip-a');
    rows('first');
    run();
    const index = new KvIndex();
    index.update('thinker#0', thinkerStatsOf(core.stats()).prefix!.held);
    expect(thinkerStatsOf(core.stats()).prefix!.held!.root).toBe(modelRoot(spec.model));
    const keyed = (blockKey: string) => [{ start: map.spans[0].start, length: 12, blockKey }];
    const prompt = (blockKey: string) => ({ tokenIds: question(7).tokenIds, namable: 19, keyed: keyed(blockKey) });
    expect(index.overlaps(['thinker#0'], prompt('clip-a'), 0).get('thinker#0')).toBe(16);
    expect(index.overlaps(['thinker#0'], prompt('clip-b'), 0).get('thinker#0')).toBe(0);
  });
});

describe('engine.sync_encoding (the bench baseline)', () => {
  it('no step runs while a request waits for its rows; asynchronous, text runs meanwhile', () => {
    const sync = thinkerOf({ [THINKER_CACHE]: `${cache}\n      sync_encoding: true` });
    expect(sync.engine.syncEncoding).toBe(true);
    const blocked = setup(sync);
    blocked.add('clip', 6, 'clip-a');
    blocked.addText('text');
    blocked.run();
    expect(blocked.runner.steps).toEqual([]); // the encode stalls the whole batch
    blocked.rows('clip');
    blocked.run();
    expect(blocked.final('clip')).toMatchObject({ finishReason: 'length' });
    expect(blocked.final('text')).toMatchObject({ finishReason: 'length' });

    const overlapped = setup();
    overlapped.add('clip', 6, 'clip-b');
    overlapped.addText('text');
    overlapped.run();
    expect(overlapped.final('text')).toMatchObject({ finishReason: 'length' }); // answered during the encode
    expect(overlapped.final('clip')).toBeUndefined();
  });

  it('is refused on a stage other than the thinker', () => {
    expect(() =>
      configWith('tiny-omni.yaml', {
        'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too':
          'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too\n      sync_encoding: true',
      }),
    ).toThrow(/sync_encoding: only the thinker/);
  });
});
