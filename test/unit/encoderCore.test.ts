/**
 * EncoderCore with a fake encoder: a cache hit skips the encoder, same-modality items batch until the batch is full
 * or its timeout, entries a running request references survive any eviction, and nothing outlives an abort.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { prepareImage } from '../../src/media/prepareMedia.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import type { EncoderSettings } from '../../src/common/encoderSettings.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { EncoderCore } from '../../stages/encoder/EncoderCore.ts';
import { encoderStatsOf } from '../../stages/encoder/protocol.ts';
import type { EncodeItem } from '../../src/worker/messages.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { pngBytes } from '../helpers/media.ts';

const D = 4;
const ROWS_PER_IMAGE = 4; // a 56 x 56 image: 4 x 4 patches merged 2 x 2
const ITEM_BYTES = ROWS_PER_IMAGE * D * 4;

class FakeVisionRunner {
  readonly modality = 'image' as const;
  readonly outputSize = D;
  readonly identity = 'fake-vision';
  readonly batches: number[] = [];
  /** Runs of more items than this fail as onnxruntime's allocation failures do. */
  allocatesUpTo = Infinity;

  encode(items: readonly EncoderInput[]): Float32Array[] {
    this.batches.push(items.length);
    if (items.length > this.allocatesUpTo)
      throw new Error('image encoder run failed: Failed to allocate memory for requested buffer of size 123456');
    // Rows that depend on the pixels, so different images give different rows.
    return items.map((item) =>
      new Float32Array(item.numEmbeddings * D).fill(item.modality === 'image' ? item.patches[7] : 0),
    );
  }
}

const graph = configWith('tiny-omni.yaml');
const baseSpec = graph.stages.find((s) => s.stageId === 'image-encoder')!;

function setup(settings: Partial<EncoderSettings> = {}) {
  const spec = { ...baseSpec, encoder: { ...baseSpec.encoder!, ...settings } };
  const adapter = new FakeAdapter();
  const ctx = stageContext(spec, adapter);
  const runner = new FakeVisionRunner();
  const core = new EncoderCore(ctx, runner);
  const add = (requestId: string, numItems: number) =>
    core.add({
      type: 'add',
      requestId,
      sampling: spec.defaultSamplingParams,
      downstream: [{ instance: 'thinker#0', stageId: 'thinker' }],
      upstreams: [{ instance: 'main', stageId: 'main' }],
      args: {
        encode: Array.from({ length: numItems }, (_, item): EncodeItem => ({
          item,
          modality: 'image',
          numEmbeddings: ROWS_PER_IMAGE,
          what: `${requestId} image ${item}`,
        })),
      },
      firstChunkDeadline: Date.now() + 30_000,
    });
  const media = (requestId: string, item: number, bytes: Uint8Array, final = false) =>
    core.onArrivals([
      {
        requestId,
        chunk: received(
          requestId,
          'main',
          'image-encoder',
          { kind: 'media', item, format: 'image', what: `${requestId} image ${item}`, bytes },
          final,
        ),
      },
    ]);
  const encoderStats = () => encoderStatsOf(core.stats()).encoder!;
  return { adapter, ctx, runner, core, add, media, encoderStats };
}

const key = (bytes: Uint8Array) => prepareImage(bytes).cacheKey('fake-vision');

beforeEach(() => resetSeqs());
afterEach(() => vi.useRealTimers());

describe('EncoderCore', () => {
  it('the same image in two requests runs the encoder once; the second is a cache hit with the same rows', () => {
    const { adapter, runner, core, add, media, encoderStats } = setup({ batchTimeoutMs: 0 });
    const img = pngBytes(56, 56, 3);
    add('r1', 1);
    media('r1', 0, img, true);
    expect(core.step()).toBe(true);
    add('r2', 1);
    media('r2', 0, img, true); // answered on arrival, no step needed
    expect(runner.batches).toEqual([1]);
    const [a, b] = adapter.to('thinker#0');
    expect(a).toMatchObject({ requestId: 'r1', final: true, body: { kind: 'encoderRows', item: 0 } });
    expect(b).toMatchObject({ requestId: 'r2', final: true, body: { kind: 'encoderRows', item: 0 } });
    expect(b.body).toMatchObject({ numRows: ROWS_PER_IMAGE, width: D });
    expect(b.body?.kind === 'encoderRows' && b.body.rows).toEqual(a.body?.kind === 'encoderRows' && a.body.rows);
    expect(encoderStats()).toMatchObject({
      cacheHits: 1,
      cacheMisses: 1,
      runs: 1,
      itemsEncoded: 1,
      decodesSkipped: 1, // the second request's bytes were known: no decode, just a hash
      cachePinnedBytes: 0,
      cacheEntries: 1,
    });
  });

  it('known bytes whose rows were evicted are decoded and encoded again, with the same rows', () => {
    // A cache of one image's rows: a second image evicts the first.
    const { adapter, runner, core, add, media, encoderStats } = setup({
      batchTimeoutMs: 0,
      cacheBytes: ROWS_PER_IMAGE * D * 4,
    });
    const [img, other] = [pngBytes(56, 56, 3), pngBytes(56, 56, 4)];
    for (const [r, bytes] of [
      ['r1', img],
      ['r2', other],
      ['r3', img],
    ] as const) {
      add(r, 1);
      media(r, 0, bytes, true);
      core.step();
    }
    expect(runner.batches).toEqual([1, 1, 1]);
    const rows = adapter.to('thinker#0').map((c) => (c.body?.kind === 'encoderRows' ? c.body.rows : null));
    expect(rows[2]).toEqual(rows[0]);
    expect(encoderStats()).toMatchObject({ cacheEvictions: 2, decodesSkipped: 1, itemsEncoded: 3 });
  });

  it('bytes that failed to decode are not remembered: each request gets the error', () => {
    const { adapter, add, media, encoderStats } = setup({ batchTimeoutMs: 0 });
    const broken = pngBytes(56, 56, 1);
    broken.fill(0, 60);
    for (const r of ['r1', 'r2']) {
      add(r, 1);
      media(r, 0, broken, true);
    }
    const errors = adapter.to('thinker#0').map((c) => (c.body?.kind === 'encoderRows' ? c.body.error?.code : null));
    expect(errors).toEqual(['CHORUS_ERR_MEDIA_INVALID', 'CHORUS_ERR_MEDIA_INVALID']);
    expect(encoderStats().decodesSkipped).toBe(0);
  });

  it('batches items of several requests: a partial batch waits for its timeout, a full one starts at once', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const { runner, core, add, media } = setup({ maxBatchSize: 3, batchTimeoutMs: 20 });
    for (const r of ['a', 'b']) {
      add(r, 1);
      media(r, 0, pngBytes(56, 56, r.charCodeAt(0)), true);
    }
    expect(core.step()).toBe(false); // 2 of 3: wait for company
    expect(core.nextWakeAtMs()).toBe(1_000_020);
    vi.setSystemTime(1_000_020);
    expect(core.step()).toBe(true);
    expect(runner.batches).toEqual([2]);
    for (const r of ['c', 'd', 'e']) {
      add(r, 1);
      media(r, 0, pngBytes(56, 56, r.charCodeAt(0)), true);
    }
    expect(core.step()).toBe(true); // full: no waiting
    expect(runner.batches).toEqual([2, 3]);
    expect(core.nextWakeAtMs()).toBeNull();
  });

  it(
    'under a small budget, an entry a running request references is never evicted; released ones are, oldest ' +
      'first',
    () => {
      const { core, add, media, encoderStats } = setup({ batchTimeoutMs: 0, cacheBytes: Math.floor(1.5 * ITEM_BYTES) });
      const [a, b, c, d] = [1, 2, 3, 4].map((seed) => pngBytes(56, 56, seed));
      // r1 and r2 each hold one encoded image while they wait for their second: both entries are pinned.
      add('r1', 2);
      media('r1', 0, a);
      core.step();
      add('r2', 2);
      media('r2', 0, c);
      core.step(); // C does not fit beside pinned A: the cache runs over budget rather than drop a pinned entry
      expect([a, c].map((x) => core.cache.has(key(x)))).toEqual([true, true]);
      expect(encoderStats()).toMatchObject({
        cacheEvictions: 0,
        cacheBytes: 2 * ITEM_BYTES,
        cachePinnedBytes: 2 * ITEM_BYTES,
      });
      media('r1', 1, b, true);
      core.step(); // r1 done: A and B unpinned and trimmed (A first); C, still pinned by r2, stays
      expect([a, b, c].map((x) => core.cache.has(key(x)))).toEqual([false, false, true]);
      media('r2', 1, d, true);
      core.step(); // r2 done: C is the least recently released
      expect([c, d].map((x) => core.cache.has(key(x)))).toEqual([false, true]);
      expect(encoderStats()).toMatchObject({
        cacheEvictions: 3,
        cacheEntries: 1,
        cachePinnedBytes: 0,
        cacheBytes: ITEM_BYTES,
      });
    },
  );

  it(
    "an abort drops the request's queued work and pins; an item that does not decode is answered with its " + 'error',
    () => {
      const { adapter, ctx, runner, core, add, media, encoderStats } = setup({ batchTimeoutMs: 1000 });
      add('gone', 1);
      media('gone', 0, pngBytes(56, 56, 9), true);
      expect(core.step()).toBe(false); // waiting for company
      core.abort('gone');
      expect(encoderStats()).toMatchObject({ queuedItems: 0, cacheEntries: 0, cacheBytes: 0 });
      expect(core.step()).toBe(false);
      expect(runner.batches).toEqual([]);
      expect(ctx.posted).toContainEqual({
        type: 'finished',
        requestId: 'gone',
        finishReason: 'cancelled',
        numTokens: 0,
      });

      add('bad', 1);
      const corrupt = pngBytes(56, 56, 1);
      corrupt.fill(0, 60);
      media('bad', 0, corrupt, true);
      const sent = adapter.to('thinker#0').at(-1)!;
      expect(sent).toMatchObject({
        requestId: 'bad',
        final: true,
        finishReason: 'stop',
        body: { kind: 'encoderRows', item: 0, error: { code: ErrorCodes.MEDIA_INVALID } },
      });
      expect(sent.body?.kind === 'encoderRows' && sent.body.error?.message).toMatch(/^bad image 0: cannot decode PNG/);
      expect(core.size).toBe(0);
    },
  );

  describe('memory per run (encoder.max_encode_bytes, estimated from the tiny vision model)', () => {
    const three = (add: (r: string, n: number) => void, media: (r: string, i: number, b: Uint8Array) => void) => {
      for (const r of ['a', 'b', 'c']) {
        add(r, 1);
        media(r, 0, pngBytes(56, 56, r.charCodeAt(0)));
      }
    };
    const codes = (adapter: FakeAdapter) =>
      adapter.to('thinker#0').map((c) => (c.body?.kind === 'encoderRows' ? (c.body.error?.code ?? 'rows') : null));

    it('a run onnxruntime cannot allocate is split into runs of one; each item gets its rows', () => {
      const { adapter, runner, core, add, media, encoderStats } = setup({ batchTimeoutMs: 0, maxBatchSize: 3 });
      runner.allocatesUpTo = 1;
      three(add, media);
      core.step();
      expect(runner.batches).toEqual([3, 1, 1, 1]);
      expect(codes(adapter)).toEqual(['rows', 'rows', 'rows']);
      expect(encoderStats()).toMatchObject({ runsSplit: 1, itemsEncoded: 3 });
    });

    it('an item over the cap fails with ENCODE_MEMORY before any run; one alone that fails to allocate too', () => {
      // A 56 x 56 image is 16 patches, ~176 KiB estimated: over 100 kB.
      const capped = setup({ batchTimeoutMs: 0, maxEncodeBytes: 100_000 });
      capped.add('r', 1);
      capped.media('r', 0, pngBytes(56, 56, 1), true);
      capped.core.step();
      expect(capped.runner.batches).toEqual([]);
      const [chunk] = capped.adapter.to('thinker#0');
      expect(chunk.body?.kind === 'encoderRows' && chunk.body.error).toMatchObject({
        code: ErrorCodes.ENCODE_MEMORY,
        message: expect.stringMatching(/^its encode needs ~0\.2 MiB of working memory \(16 patches\), over the/),
      });
      const alone = setup({ batchTimeoutMs: 0 });
      alone.runner.allocatesUpTo = 0;
      alone.add('r', 1);
      alone.media('r', 0, pngBytes(56, 56, 1), true);
      alone.core.step();
      expect(codes(alone.adapter)).toEqual([ErrorCodes.ENCODE_MEMORY]);
    });

    it('the planner never batches past the patches the cap allows', () => {
      // 300 kB allows one 16-patch image per run (25 patches), not two padded ones (32).
      const { runner, core, add, media, encoderStats } = setup({
        batchTimeoutMs: 0,
        maxBatchSize: 3,
        maxEncodeBytes: 300_000,
      });
      three(add, media);
      core.step();
      expect(runner.batches).toEqual([1, 1, 1]);
      expect(encoderStats().runsSplit).toBe(0);
    });
  });
});
