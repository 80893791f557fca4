/**
 * A clip's rows in pieces, from the encoder stage to the Thinker (docs/video.md "A clip in pieces"): an EncoderCore
 * whose runner encodes a clip's temporal groups apart runs a clip `stream_groups` groups a step and sends each piece
 * as soon as it is encoded; a ThinkerCore prefills each piece as it arrives and waits at the first row missing. Both
 * cores run here in one process, stepped in turn as their loops would, with an event log of the encoder's runs and
 * the Thinker's prefills: the clip's first rows are prefilled before its last group is encoded, and the Thinker's
 * inputs are exactly those of the clip sent whole.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EncoderInput } from '../../src/media/types.ts';
import type { EncoderSettings } from '../../src/common/encoderSettings.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { buildPositionMap } from '../../src/media/positionMap.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import { EncoderCore } from '../../stages/encoder/EncoderCore.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import type { EncoderFailurePolicy } from '../../src/common/encoderSettings.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, received, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const D = KvLengthRunner.hiddenSize;
const VID = 263;
const FRAMES = 8; // 56 x 56: 4 temporal groups of 2 x 2 rows
const ROWS = 16;
const graph = configWith('tiny-omni.yaml');
const encoderSpec = graph.stages.find((s) => s.stageId === 'image-encoder')!;
const thinkerSpec = graph.stages.find((s) => s.kind === 'thinker')!;
const encoderFrom = { instance: 'image-encoder#0', stageId: 'image-encoder' };
// [1 2 3] <video x16> [4 5]
const map = buildPositionMap([1, 2, 3, VID, 4, 5], new Map([[VID, 'video']] as const), [
  { modality: 'video', numEmbeddings: ROWS, grid: { t: 4, h: 2, w: 2 } },
]);

/** A vision encoder that attends within a clip's temporal groups: a row is the mean of its four merged patches. */
class GroupsApartRunner {
  readonly modality = 'image' as const;
  readonly outputSize = D;
  readonly identity = 'fake-vision';
  readonly clipGroupsApart = true;
  failAtRun = Infinity;
  runs = 0;

  constructor(private readonly log: string[]) {}

  encode(items: readonly EncoderInput[]): Float32Array[] {
    if (this.runs++ >= this.failAtRun) throw new ChorusError(ErrorCodes.ENCODER_FAILED, 'vision encoder run failed');
    return items.map((item) => {
      if (item.modality !== 'video') throw new Error('a clip was expected');
      this.log.push(`encode ${item.gridT} groups`);
      const width = item.patches.length / item.numPatches;
      const rows = new Float32Array(item.numEmbeddings * D);
      for (let r = 0; r < item.numEmbeddings; r++) {
        let sum = 0;
        for (let k = 0; k < 4; k++) sum += item.patches[(4 * r + k) * width];
        rows.fill(sum / 4, r * D, (r + 1) * D);
      }
      return rows;
    });
  }
}

/** 8 frames of 56 x 56 RGB, each its own shade, so every group's rows differ. */
function frames(): Uint8Array {
  const size = 56 * 56 * 3;
  const data = new Uint8Array(FRAMES * size);
  for (let f = 0; f < FRAMES; f++) for (let i = 0; i < size; i++) data[f * size + i] = (f * 29 + (i % 97)) % 256;
  return data;
}

function pipeline(streamGroups: number | null, onFailure: EncoderFailurePolicy = 'fail') {
  const log: string[] = [];
  const video = { ...encoderSpec.encoder!.video!, streamGroups };
  const settings: EncoderSettings = { ...encoderSpec.encoder!, batchTimeoutMs: 0, video };
  const encAdapter = new FakeAdapter();
  const runner = new GroupsApartRunner(log);
  const encoder = new EncoderCore(stageContext({ ...encoderSpec, encoder: settings }, encAdapter), runner);
  const thAdapter = new FakeAdapter();
  const model = new KvLengthRunner();
  const thinker = new ThinkerCore(stageContext(thinkerSpec, thAdapter), model);
  const what = 'messages[0].content[1] (video)';
  const addClip = (requestId: string) => {
    encoder.add({
      type: 'add',
      requestId,
      sampling: encoderSpec.defaultSamplingParams,
      downstream: [{ instance: 'thinker#0', stageId: 'thinker' }],
      upstreams: [{ instance: 'main', stageId: 'main' }],
      args: { encode: [{ item: 0, modality: 'video', numEmbeddings: ROWS, what }] },
      firstChunkDeadline: Date.now() + 30_000,
    });
    const video8 = { numFrames: FRAMES, width: 56, height: 56, fps: 2, sourceKey: 'clip' };
    const body = { kind: 'media' as const, item: 0, format: 'video' as const, what, bytes: frames(), video: video8 };
    encoder.onArrivals([{ requestId, chunk: received(requestId, 'main', 'image-encoder', body, true) }]);
  };
  addClip('r');
  thinker.add({
    type: 'add',
    requestId: 'r',
    sampling: { ...thinkerSpec.defaultSamplingParams, maxTokens: 1, ignoreEos: true },
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [encoderFrom],
    args: {
      promptTokenIds: map.tokenIds,
      media: {
        spans: map.spans,
        items: [{ modality: 'video', numEmbeddings: ROWS, what, from: encoderFrom, onFailure }],
      },
    },
    firstChunkDeadline: Date.now() + 30_000,
  });
  let forwarded = 0;
  /** Positions the Thinker computed for the request (its KV is freed when it ends: count its steps instead). */
  const computed = () => model.steps.reduce((n, s) => n + s.numTokens, 0);
  /** Each core's step in turn, the encoder's chunks handed to the Thinker between them, until both are idle. */
  const run = () => {
    for (let turns = 0; turns < 100; turns++) {
      const before = computed();
      const stepped = thinker.step();
      if (computed() > before) log.push(`prefill ${before}-${computed()}`);
      const encoded = encoder.step();
      for (const c of encAdapter.to('thinker#0').slice(forwarded)) {
        forwarded++;
        const b = c.body?.kind === 'encoderRows' ? c.body : null;
        if (b && !b.error) log.push(`rows ${b.offset ?? 0}-${(b.offset ?? 0) + b.numRows}`);
        const chunk = received('r', 'image-encoder', 'thinker', c.body ?? null, c.final);
        thinker.onArrivals([{ requestId: 'r', chunk }]);
      }
      if (!encoded && !stepped) return;
    }
    throw new Error('the cores never went idle');
  };
  const inputs = () => concatFloat32(model.steps.map((s) => s.inputsEmbeds ?? model.embed(s.tokenIds!)));
  return { log, run, inputs, runner, encoder, addClip, encAdapter, thAdapter };
}

beforeEach(() => resetSeqs());

describe('a clip in pieces', () => {
  it("prefills the clip's first rows before its last group is encoded; the inputs are the whole clip's", () => {
    const pieces = pipeline(1);
    pieces.run();
    expect(pieces.log).toEqual([
      'prefill 0-3', // the text before the clip, while it waits to be encoded
      'encode 1 groups',
      'rows 0-4',
      'prefill 3-7',
      'encode 1 groups',
      'rows 4-8',
      'prefill 7-11',
      'encode 1 groups',
      'rows 8-12',
      'prefill 11-15',
      'encode 1 groups',
      'rows 12-16',
      'prefill 15-21', // the last rows, the text after the clip, and the sampled token fed back
    ]);
    const whole = pipeline(null);
    whole.run();
    expect(whole.log).toEqual(['prefill 0-3', 'encode 4 groups', 'rows 0-16', 'prefill 3-21']);
    expect(pieces.inputs()).toEqual(whole.inputs());
    // The last piece is the encoder's final chunk and carries the content key (the EC store keeps the clip whole).
    const last = pieces.encAdapter.to('thinker#0').at(-1)!;
    expect(last.final).toBe(true);
    expect(last.body).toMatchObject({ kind: 'encoderRows', offset: 12, numRows: 4, contentKey: expect.any(String) });
    expect(
      pieces.encAdapter
        .to('thinker#0')
        .slice(0, -1)
        .every((c) => !c.final && !('contentKey' in c.body!)),
    ).toBe(true);
    expect(pieces.thAdapter.to('main').at(-1)).toMatchObject({ final: true, finishReason: 'length' });
  });

  it('a clip that fails after some of its pieces were prefilled fails the request, even under text_only', () => {
    const p = pipeline(1, 'text_only');
    p.runner.failAtRun = 2;
    p.run();
    expect(p.log.slice(0, 7)).toEqual([
      'prefill 0-3',
      'encode 1 groups',
      'rows 0-4',
      'prefill 3-7',
      'encode 1 groups',
      'rows 4-8',
      'prefill 7-11',
    ]);
    // Its positions 3-10 are computed: cutting the clip out would move what follows them.
    expect(p.thAdapter.to('main').at(-1)).toMatchObject({
      final: true,
      finishReason: 'error',
      error: {
        code: ErrorCodes.ENCODER_FAILED,
        message: expect.stringMatching(/^messages\[0\]\.content\[1\] \(video\)/),
      },
    });
  });

  it('a request for the same clip mid-encode gets the pieces done at once, then the rest; an abort stops it', () => {
    const p = pipeline(1);
    p.encoder.step(); // planned: the clip is taken in pieces
    p.encoder.step(); // piece 1
    p.addClip('r2'); // pending in the cache: it waits for the same encode
    p.encoder.step(); // piece 2
    const of = (requestId: string) =>
      p.encAdapter.sent.flatMap((c) =>
        c.requestId === requestId && c.body?.kind === 'encoderRows' && !c.body.error
          ? [[c.body.offset ?? 0, c.body.numRows, c.final]]
          : [],
      );
    expect(of('r2')).toEqual([
      [0, 4, false], // what was done when it came
      [4, 4, false],
    ]);
    p.encoder.abort('r');
    p.encoder.abort('r2');
    expect(p.encoder.step()).toBe(false); // nobody waits: the rest of the clip is not encoded
    expect(p.runner.runs).toBe(2);
  });
});
