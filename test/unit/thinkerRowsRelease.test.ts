/**
 * Media rows let go once prefilled (issue 44 item 6): the Thinker releases an item's rows when its spans are computed
 * and the request's PositionRows hold those positions' inputs, tells main (media_released) and main's budget of rows
 * held drops by them; a recompute (a preempted request from position 0) and the prefix cache's names read the released
 * rows back from the store, the same floats; without a store nothing is released.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { MediaRowsBudget } from '../../src/engine/MediaRowsBudget.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { buildPositionMap } from '../../src/media/positionMap.ts';
import { PositionRows } from '../../src/sched/PositionRows.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { ThinkerMedia } from '../../stages/thinker/ThinkerMedia.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const D = KvLengthRunner.hiddenSize;
const VID = 267;
const IMG = 268;
const rowsOf = (n: number, base: number) => Float32Array.from({ length: n * D }, (_, i) => base + i);

beforeEach(() => resetSeqs());

describe('ThinkerMedia.releasePrefilled', () => {
  // [1] <video x 4> [2] <image x 2> [3]
  const map = buildPositionMap(
    [1, VID, 2, IMG, 3],
    new Map([
      [VID, 'video'],
      [IMG, 'image'],
    ] as const),
    [
      { modality: 'video', numEmbeddings: 4, grid: { t: 1, h: 2, w: 2 } },
      { modality: 'image', numEmbeddings: 2 },
    ],
  );
  const from = { instance: 'v#0', stageId: 'v' };
  const plan = {
    spans: map.spans,
    items: [
      { modality: 'video' as const, numEmbeddings: 4, what: 'clip', from, onFailure: 'fail' as const, blockKey: 'k' },
      { modality: 'image' as const, numEmbeddings: 2, what: 'picture', from, onFailure: 'fail' as const },
    ],
  };
  /** The media, its rows in, and a store holding the inputs of positions [0, upTo) as a step would write them. */
  function prefilled(upTo: number) {
    const media = new ThinkerMedia(plan, [...map.tokenIds], D);
    media.setRows(0, 'v', { rows: rowsOf(4, 100), numRows: 4, width: D });
    media.setRows(1, 'v', { rows: rowsOf(2, 500), numRows: 2, width: D });
    const inputs = media.embeds(0, map.length, new Float32Array(map.length * D));
    const store = new PositionRows(D);
    store.set(0, upTo, inputs.subarray(0, upTo * D), new Float32Array(upTo * D).fill(7));
    return { media, store, inputs };
  }

  it('lets go of the rows of items prefilled and in the store, and reads them back there for a recompute', () => {
    const { media, store, inputs } = prefilled(7);
    const before = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((p) => media.rowAt(p)?.slice());
    media.recoverFrom(() => store);
    expect(media.releasePrefilled(5)).toBe(4 * D * 4); // the clip (positions 1-4); the image (6-7) not computed yet
    expect(media.rowsOf(0)).toBeNull();
    expect(media.releasePrefilled(8)).toBe(0); // the store holds positions 0-6 only: the image stays
    store.set(7, 1, inputs.subarray(7 * D, 8 * D), new Float32Array(D));
    expect(media.releasePrefilled(8)).toBe(2 * D * 4);
    expect(media.complete).toBe(true);
    expect(media.readyLimit(0)).toBe(map.length); // nothing waits for released rows
    // A recompute from 0 gets the same inputs; the names read the same rows (rows-named image included).
    expect(media.embeds(0, map.length, new Float32Array(map.length * D))).toEqual(inputs);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((p) => media.rowAt(p)?.slice())).toEqual(before);
  });

  it('keeps the rows to the end without a store', () => {
    const { media } = prefilled(9);
    expect(media.releasePrefilled(9)).toBe(0);
    media.recoverFrom(() => null);
    expect(media.releasePrefilled(9)).toBe(0);
    expect(media.rowsOf(0)).not.toBeNull();
  });
});

describe('the Thinker and main', () => {
  it('tells main once a clip is prefilled, and main holds that much less', () => {
    const spec = configWith('tiny-omni.yaml', {
      'prefix_cache: { max_bytes: 128MiB, block_positions: 16 }':
        'prefix_cache: { max_bytes: 1MiB, block_positions: 4 }',
    }).stages.find((s) => s.kind === 'thinker')!;
    const adapter = new FakeAdapter();
    const ctx = stageContext(spec, adapter);
    const core = new ThinkerCore(ctx, new KvLengthRunner());
    const clip = buildPositionMap([1, 2, VID, 3], new Map([[VID, 'video']] as const), [
      { modality: 'video', numEmbeddings: 12, grid: { t: 2, h: 2, w: 3 } },
    ]);
    const vision = { instance: 'image-encoder#0', stageId: 'image-encoder' };
    core.add({
      type: 'add',
      requestId: 'r',
      sampling: { ...spec.defaultSamplingParams, maxTokens: 3, ignoreEos: true },
      downstream: [{ instance: 'main', stageId: 'main' }],
      upstreams: [vision],
      args: {
        promptTokenIds: clip.tokenIds,
        media: {
          spans: clip.spans,
          items: [
            { modality: 'video', numEmbeddings: 12, what: 'clip', from: vision, onFailure: 'fail', blockKey: 'k' },
          ],
        },
      },
      firstChunkDeadline: Date.now() + 30_000,
    });
    while (core.step());
    expect(ctx.posted.filter((m) => m.type === 'media_released')).toEqual([]); // waiting for the rows
    const body = { kind: 'encoderRows' as const, item: 0, rows: rowsOf(12, 100), numRows: 12, width: D };
    core.onArrivals([{ requestId: 'r', chunk: received('r', vision.stageId, 'thinker', body) }]);
    while (core.step());
    expect(ctx.posted.filter((m) => m.type === 'media_released')).toEqual([
      { type: 'media_released', requestId: 'r', bytes: 12 * D * 4 },
    ]);
    expect(adapter.sent.find((c) => c.requestId === 'r' && c.final)).toMatchObject({ finishReason: 'length' });

    const budget = new MediaRowsBudget(1_000_000, D * 4);
    const prompt = { items: [{ numEmbeddings: 12 }] } as unknown as PreparedPrompt;
    budget.charge('r', 'thinker#0', prompt);
    expect(budget.heldBytes('thinker#0')).toBe(12 * D * 4);
    expect(budget.releasePart('r', 12 * D * 4)).toBe(true);
    expect(budget.heldBytes('thinker#0')).toBe(0);
    expect(budget.release('r')).toBe(true); // its end releases what is left (nothing): never below zero
    expect(budget.heldBytes('thinker#0')).toBe(0);
    expect(budget.releasePart('gone', 10)).toBe(false);
  });
});
