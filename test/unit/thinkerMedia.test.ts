/**
 * The Thinker's media path through ThinkerCore with a fake runner: text before the first item prefills while the
 * encoders run, the request waits at an item's span until its rows arrive, the steps' inputs_embeds are the text
 * embeddings with the rows spliced in, and an item that cannot be delivered fails the request or is dropped.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ThinkerBatchItem, ThinkerRunner, ThinkerStepOutput } from '../../stages/types.ts';
import { buildPositionMap } from '../../src/media/positionMap.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { ThinkerMedia } from '../../stages/thinker/ThinkerMedia.ts';
import type { EncoderFailurePolicy } from '../../src/common/encoderSettings.ts';
import { KV_HELD, type AddRequest } from '../../src/worker/messages.ts';
import type { ThinkerArgs } from '../../stages/thinker/protocol.ts';
import { mediaFailedMessage } from '../../stages/requestEvents.ts';
import { ErrorCodes, type ErrorCode } from '../../src/common/errors.ts';
import { configWith } from '../helpers/engine.ts';
import { deliverKind, FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';

const D = 4;
const IMG = 262;
const AUD = 261;

class FakeThinkerRunner implements ThinkerRunner {
  readonly hiddenSize = D;
  readonly vocabSize = 512;
  readonly eosTokenId = 256;
  readonly supports = { inputsEmbeds: true, hiddenStates: true, embeddings: true };
  readonly batches: ThinkerBatchItem[][] = [];

  embed(ids: readonly number[]): Float32Array {
    const out = new Float32Array(ids.length * D);
    ids.forEach((id, i) => out.set([id, id + 0.25, -id, 1], i * D));
    return out;
  }

  execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
    this.batches.push([...items]);
    return items.map((it) => ({
      seqId: it.seqId,
      tokenId: it.sample ? 300 : null,
      embeds: it.inputsEmbeds ?? this.embed(it.tokenIds!),
      hidden: new Float32Array(it.numTokens * D),
    }));
  }

  readonly kvBytesPerToken = 1;

  kvBytes(): number {
    return 0;
  }
  warm(): void {}
  free(): void {}
  moveSequence(): void {}
  copySequence(): void {}
  async close(): Promise<void> {}
}

const rowsOf = (n: number, base: number) => Float32Array.from({ length: n * D }, (_, i) => base + i / 100);
const imageRows = rowsOf(4, 1000);
const audioRows = rowsOf(3, 2000);
const graph = configWith('tiny-omni.yaml');
const spec = graph.stages.find((s) => s.kind === 'thinker')!;
// text, image, text, audio, text: [1 2 3] <image x4> [4 5] <audio x3> [6]
const map = buildPositionMap(
  [1, 2, 3, IMG, 4, 5, AUD, 6],
  new Map([
    [IMG, 'image'],
    [AUD, 'audio'],
  ] as const),
  [
    { modality: 'image', numEmbeddings: 4 },
    { modality: 'audio', numEmbeddings: 3 },
  ],
);
const image = { instance: 'image-encoder#0', stageId: 'image-encoder' };
const audio = { instance: 'audio-encoder#0', stageId: 'audio-encoder' };

function setup(
  policy: { image: EncoderFailurePolicy; audio: EncoderFailurePolicy } = { image: 'fail', audio: 'fail' },
  maxTokens = 2,
  imageFrom: { readonly instance: string; readonly stageId: string } = image,
) {
  const adapter = new FakeAdapter();
  const ctx = stageContext(spec, adapter);
  const runner = new FakeThinkerRunner();
  const core = new ThinkerCore(ctx, runner);
  const add: AddRequest<ThinkerArgs> = {
    type: 'add',
    requestId: 'r',
    sampling: { ...spec.defaultSamplingParams, maxTokens, ignoreEos: true },
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [image, audio],
    args: {
      promptTokenIds: map.tokenIds,
      media: {
        spans: map.spans,
        items: [
          {
            modality: 'image',
            numEmbeddings: 4,
            what: 'messages[0].content[1] (image)',
            from: imageFrom,
            onFailure: policy.image,
          },
          {
            modality: 'audio',
            numEmbeddings: 3,
            what: 'messages[0].content[3] (audio)',
            from: audio,
            onFailure: policy.audio,
          },
        ],
      },
    },
    firstChunkDeadline: Date.now() + 30_000,
  };
  core.add(add);
  const rows = (item: number, from: typeof image, data: Float32Array) =>
    core.onArrivals([
      {
        requestId: 'r',
        chunk: received('r', from.stageId, 'thinker', {
          kind: 'encoderRows',
          item,
          rows: data,
          numRows: data.length / D,
          width: D,
        }),
      },
    ]);
  const itemError = (item: number, from: typeof image, code: ErrorCode, message: string) =>
    core.onArrivals([
      {
        requestId: 'r',
        chunk: received('r', from.stageId, 'thinker', { kind: 'encoderRows', item, error: { code, message } }),
      },
    ]);
  return { adapter, ctx, runner, core, rows, itemError };
}

/** Concatenated input rows of every step of request r: what the model saw, position by position. */
function modelInputs(runner: FakeThinkerRunner): Float32Array {
  return concatFloat32(runner.batches.flat().map((it) => it.inputsEmbeds ?? runner.embed(it.tokenIds!)));
}

beforeEach(() => resetSeqs());

describe('ThinkerCore with media', () => {
  it(
    'prefills the text before the first item, waits at its span, then splices the rows in ' +
      '(text-image-text-audio-text)',
    () => {
      const { adapter, runner, core, rows } = setup();
      expect(adapter.expected.map((e) => e.from)).toEqual([image.instance, audio.instance]);
      expect(core.step()).toBe(true);
      expect(runner.batches[0][0]).toMatchObject({ tokenIds: [1, 2, 3], numTokens: 3, sample: false });
      expect(runner.batches[0][0].inputsEmbeds).toBeUndefined();
      expect(core.step()).toBe(false); // WAITING_FOR_CHUNK at the image's span
      rows(1, audio, audioRows);
      expect(core.step()).toBe(false); // the audio is ready but comes after the image
      rows(0, image, imageRows);
      expect(core.step()).toBe(true);
      expect(runner.batches[1][0]).toMatchObject({ numTokens: 10, sample: true });

      // The merged sequence equals a splice by hand: text rows, image rows at 3..6, text, audio rows at 9..11, text.
      const manual = new Float32Array(13 * D);
      const textIds = [1, 2, 3, -1, -1, -1, -1, 4, 5, -1, -1, -1, 6];
      for (let p = 0; p < 13; p++) {
        const row =
          p >= 3 && p < 7
            ? imageRows.subarray((p - 3) * D, (p - 2) * D)
            : p >= 9 && p < 12
              ? audioRows.subarray((p - 9) * D, (p - 8) * D)
              : runner.embed([textIds[p]]);
        manual.set(row, p * D);
      }
      expect(modelInputs(runner)).toEqual(manual);
      expect(adapter.to('main').map((c) => c.body?.kind === 'text' && c.body.tokenIds)).toEqual([[300]]);
      expect(core.step()).toBe(true); // decode: the sampled token fed back
      expect(adapter.to('main').at(-1)).toMatchObject({
        final: true,
        finishReason: 'length',
        body: { kind: 'text', tokenIds: [300] },
      });
      expect(core.size).toBe(0);
    },
  );

  it(
    'with text_only, an item its encoder could not deliver is cut out of the prompt and named in the final ' + 'chunk',
    async () => {
      const { adapter, ctx, runner, core, rows, itemError } = setup({ image: 'fail', audio: 'text_only' }, 1);
      core.step();
      itemError(
        1,
        audio,
        ErrorCodes.MEDIA_INVALID,
        'messages[0].content[3] (audio): not a WAV file (no RIFF/WAVE header)',
      );
      rows(0, image, imageRows);
      expect(core.step()).toBe(true);
      expect(runner.batches[1][0]).toMatchObject({ numTokens: 7, sample: true }); // 13 positions - 3 of audio - 3 done
      const seen = modelInputs(runner);
      expect(seen.length).toBe(10 * D);
      // the audio span is gone, the text after it moved up
      expect(seen.subarray(7 * D)).toEqual(runner.embed([4, 5, 6]));
      const last = adapter.to('main').at(-1)!;
      expect(last.final).toBe(true);
      const warnings = last.body?.kind === 'text' ? last.body.warnings : undefined;
      expect(warnings).toEqual([
        'messages[0].content[3] (audio) was left out of the answer: CHORUS_ERR_MEDIA_INVALID: messages[0].content[3] ' +
          '(audio): not a WAV file (no RIFF/WAVE header)',
      ]);
      // `finished` follows once the final chunk is in its edge (a promise): main gets the warnings both ways.
      await vi.waitFor(() =>
        expect(ctx.posted.find((m) => m.type === 'finished')).toMatchObject({
          finishReason: 'length',
          warnings,
        }),
      );
    },
  );

  it('with fail, an item error ends the request with that error, naming the item', () => {
    const { adapter, core, itemError } = setup();
    core.step();
    itemError(0, image, ErrorCodes.ENCODER_FAILED, 'vision encoder run failed for a batch of 1');
    expect(core.size).toBe(0);
    expect(adapter.to('main').at(-1)).toMatchObject({
      final: true,
      finishReason: 'error',
      error: {
        code: ErrorCodes.ENCODER_FAILED,
        message: 'messages[0].content[1] (image): vision encoder run failed for a batch of 1',
      },
    });
  });

  it('an encoder that stops (deadline, or main reports it died) costs only its items under text_only', () => {
    const { adapter, runner, core, rows } = setup({ image: 'text_only', audio: 'text_only' }, 1);
    core.step();
    core.onArrivals([
      {
        requestId: 'r',
        error: Object.assign(new Error('chunk 0 did not arrive in time'), { code: ErrorCodes.CHUNK_TIMEOUT }) as never,
        fromStageId: 'audio-encoder',
      },
    ]);
    const died = { code: ErrorCodes.STAGE_DIED, message: 'stage image-encoder#0 died' };
    deliverKind(core, mediaFailedMessage('r', image.instance, died));
    expect(adapter.stopped).toEqual([{ requestId: 'r', from: image.instance }]);
    rows(0, image, imageRows); // late rows of a dropped item are ignored
    expect(core.step()).toBe(true);
    expect(runner.batches[1][0]).toMatchObject({ tokenIds: [4, 5, 6], sample: true });
    expect(runner.batches[1][0].inputsEmbeds).toBeUndefined();
    const last = adapter.to('main').at(-1)!.body;
    expect(last?.kind === 'text' && last.warnings?.length).toBe(2);
  });
});

describe('an item main did not encode (its KV was to be in the prefix cache)', () => {
  it('asks main for its encode when the cache did not give its positions, and waits at it', () => {
    const { ctx, core, runner, rows } = setup(undefined, 2, { instance: KV_HELD, stageId: KV_HELD });
    expect(core.step()).toBe(true); // the text before the image
    expect(core.step()).toBe(false); // waiting at the image's span
    const retries = ctx.posted.filter((m) => m.type === 'media_retry');
    expect(retries).toEqual([
      expect.objectContaining({
        requestId: 'r',
        item: 0,
        error: expect.objectContaining({ code: 'CHORUS_ERR_KV_NOT_HELD' }),
      }),
    ]);
    // Nothing past the image's span start was computed: it waits for the next run, as for any item asked again.
    expect(runner.batches.flat().reduce((n, it) => n + it.numTokens, 0)).toBeLessThanOrEqual(3);
    rows(1, audio, audioRows);
    expect(ctx.posted.filter((m) => m.type === 'media_retry')).toHaveLength(1); // asked once per run
  });

  it('releases the item when the cache gave its positions: a recompute reads its rows from the request`s store', () => {
    const items = [
      { modality: 'image', numEmbeddings: 4, what: 'img', from: { instance: KV_HELD, stageId: KV_HELD } },
      { modality: 'audio', numEmbeddings: 3, what: 'aud', from: audio },
    ] as const;
    const plan = { spans: map.spans, items: items.map((i) => ({ ...i, onFailure: 'fail' as const })) };
    const media = new ThinkerMedia(plan, [...map.tokenIds], D);
    const store = Float32Array.from({ length: 13 * 2 * D }, (_, i) => i);
    media.recoverFrom(() => ({ width: D, length: 13, rows: (n: number) => store.subarray(0, n * 2 * D) }));
    media.releaseHeld(5); // the image's span is [3, 7): not all given
    expect(media.isWaiting(0)).toBe(true);
    expect(media.heldNotAdopted(5)).toEqual([0]);
    media.releaseHeld(8);
    expect(media.isWaiting(0)).toBe(false);
    expect(media.heldNotAdopted(8)).toEqual([]);
    expect([...media.rowAt(4)!]).toEqual([...store.subarray(2 * D * 4, 2 * D * 4 + D)]);
  });
});
