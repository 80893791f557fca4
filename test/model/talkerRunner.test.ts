/**
 * The Talker runner: one frame of 16 codes per step, the same codes alone or in a batch, independent of
 * how the prefill is split, and end-of-speech at the pad row unless ignore_eos masks it.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureModel } from '../../stages/models/ensureModel.ts';
import { WARMUP_SEQ } from '../../stages/models/warmUp.ts';
import { createTalkerRunner } from '../../stages/runners.ts';
import { Prng } from '../../stages/sampling/Prng.ts';
import type { SamplingParams } from '../../src/common/samplingParams.ts';
import type { TalkerRunner } from '../../stages/types.ts';
import { sampling, smallTalker, talkerSpec, tempModelsDir } from './helpers.ts';

const C = smallTalker.conditionDim;
let models: ReturnType<typeof tempModelsDir>;
let runner: TalkerRunner;

beforeAll(async () => {
  models = tempModelsDir();
  runner = await createTalkerRunner({ model: talkerSpec() }, models.dir);
});

afterAll(async () => {
  await runner?.close();
  models?.cleanup();
});

/** Conditioning rows like the Thinker's (unit-scale embeds and hidden states). */
function rows(numRows: number, seed: number): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: numRows * C }, () => (rng.nextFloat() * 2 - 1) * 2);
}

interface Script {
  prompt: Float32Array;
  numPrompt: number;
  text: Float32Array; // one row per frame step
}

const script = (numPrompt: number, numFrames: number, seed: number): Script => ({
  prompt: rows(numPrompt, seed),
  numPrompt,
  text: rows(numFrames, seed + 1000),
});

/** Runs the scripts together: a prefill each (alone), then one batched step per frame. Returns frames as strings. */
function speak(scripts: Script[], numFrames: number, params: SamplingParams, tag: string): string[][] {
  const ids = scripts.map((_, i) => `${tag}-${i}`);
  const frames = scripts.map((s, i) => [
    runner.execute([{ seqId: ids[i], rows: s.prompt, numRows: s.numPrompt, sampling: params }])[0].codes.join(','),
  ]);
  for (let f = 1; f < numFrames; f++) {
    const outs = runner.execute(
      scripts.map((s, i) => ({
        seqId: ids[i],
        rows: s.text.subarray(f * C, (f + 1) * C),
        numRows: 1,
        sampling: params,
      })),
    );
    outs.forEach((o, i) => frames[i].push(o.eos ? 'eos' : o.codes.join(',')));
  }
  ids.forEach((id) => runner.free(id));
  return frames;
}

describe('talker runner', () => {
  it('returns one frame of numCodebooks codes inside the codebook per step', () => {
    const [frames] = speak([script(6, 12, 1)], 12, sampling(), 'range');
    for (const frame of frames) {
      const codes = frame.split(',').map(Number);
      expect(codes.length).toBe(smallTalker.numCodebooks);
      for (const c of codes) expect(c >= 0 && c < smallTalker.codebookSize).toBe(true);
    }
    expect(new Set(frames).size).toBeGreaterThan(6); // it does not repeat one frame
  });

  it('batched vs alone: identical codes (greedy)', () => {
    const scripts = [script(5, 20, 2), script(13, 20, 3), script(8, 20, 4), script(1, 20, 5)];
    const together = speak(scripts, 20, sampling(), 'batch');
    const alone = scripts.map((s, i) => speak([s], 20, sampling(), `alone${i}`)[0]);
    expect(together).toEqual(alone);
  });

  it('a long prompt speaking beside short ones runs apart (groupByNumTokens) and changes no code', () => {
    // 400 rows of prompt are past twice 5 plus 128: each frame step runs as two runs.
    const scripts = [script(5, 10, 21), script(400, 10, 22), script(12, 10, 23)];
    const together = speak(scripts, 10, sampling(), 'long');
    const alone = scripts.map((s, i) => speak([s], 10, sampling(), `longAlone${i}`)[0]);
    expect(together).toEqual(alone);
  });

  it('batched vs alone: identical codes when sampling with a seed', () => {
    const params = sampling({ temperature: 8, topK: 40, topP: 0.95, seed: 9 });
    const scripts = [script(4, 12, 6), script(9, 12, 7)];
    const together = speak(scripts, 12, params, 'sbatch');
    const alone = scripts.map((s, i) => speak([s], 12, params, `salone${i}`)[0]);
    expect(together).toEqual(alone);
    const otherSeed = speak([scripts[0]], 12, { ...params, seed: 10 }, 'other')[0];
    expect(otherSeed).not.toEqual(alone[0]);
  });

  it('a prefill split into non-sampling chunks gives the same frames as one prefill', () => {
    const s = script(12, 8, 8);
    const [whole] = speak([s], 8, sampling(), 'whole');
    const first = runner.execute([
      { seqId: 'split', rows: s.prompt.subarray(0, 7 * C), numRows: 7, sampling: sampling(), sample: false },
    ])[0];
    expect(first.codes.length).toBe(0);
    const frames = [
      runner
        .execute([{ seqId: 'split', rows: s.prompt.subarray(7 * C), numRows: 5, sampling: sampling() }])[0]
        .codes.join(','),
    ];
    for (let f = 1; f < 8; f++)
      frames.push(
        runner
          .execute([{ seqId: 'split', rows: s.text.subarray(f * C, (f + 1) * C), numRows: 1, sampling: sampling() }])[0]
          .codes.join(','),
      );
    runner.free('split');
    expect(frames).toEqual(whole);
  });

  it('ends speech at the pad row, and never under ignoreEos', () => {
    const s = script(6, 1, 11);
    const run = (params: SamplingParams, id: string) => {
      runner.execute([{ seqId: id, rows: s.prompt, numRows: s.numPrompt, sampling: params }]);
      const eos: boolean[] = [];
      for (let f = 0; f < 20; f++)
        eos.push(runner.execute([{ seqId: id, rows: runner.padRow, numRows: 1, sampling: params }])[0].eos);
      runner.free(id);
      return eos;
    };
    expect(run(sampling(), 'eos')[0]).toBe(true);
    expect(run(sampling({ ignoreEos: true }), 'noeos')).toEqual(new Array(20).fill(false));
    // Text rows do not end speech (the talker speaks while there is text).
    const [frames] = speak([script(6, 40, 12)], 40, sampling(), 'text');
    expect(frames).not.toContain('eos');
  });

  it('greedy steps take the residual codes from the graph ArgMax: the codes of sampling its logits', () => {
    const predictor = (runner as unknown as { predictor: { run(feeds: unknown, fetches: string[]): unknown } })
      .predictor;
    const run = vi.spyOn(predictor, 'run');
    const fetched = () => [...new Set(run.mock.calls.map(([, fetches]) => fetches.join()))];
    try {
      const scripts = [script(5, 10, 21), script(9, 10, 22)];
      const viaArgmax = speak(scripts, 10, sampling(), 'argmax');
      expect(fetched()).toEqual(['greedy_codes']);
      run.mockClear();
      // A zero logit bias changes no code but is not a plain argmax: the logits come out and JS samples them.
      const viaLogits = speak(scripts, 10, sampling({ logitBias: { '3': 0 } }), 'logits');
      expect(fetched()).toEqual(['logits']);
      expect(viaArgmax).toEqual(viaLogits);
    } finally {
      run.mockRestore();
    }
  });

  it('a code predictor without greedy_codes (older or foreign files) samples its logits: the same codes', async () => {
    const generated = await ensureModel(talkerSpec(), models.dir);
    const dir = join(models.dir, 'talker-without-greedy-codes');
    mkdirSync(dir);
    copyFileSync(generated.files['talker.onnx'], join(dir, 'talker.onnx'));
    copyFileSync(generated.files['pad_row.f32'], join(dir, 'pad_row.f32'));
    const { onnx } = onnxProto;
    const model = onnx.ModelProto.decode(readFileSync(generated.files['code_predictor.onnx']));
    const graph = model.graph!;
    graph.output = (graph.output ?? []).filter((o) => o.name !== 'greedy_codes');
    graph.node = (graph.node ?? []).filter((n) => n.opType !== 'ArgMax');
    writeFileSync(join(dir, 'code_predictor.onnx'), onnx.ModelProto.encode(model).finish());
    const foreign = await createTalkerRunner({ model: { source: 'file', path: join(dir, 'talker.onnx') } }, models.dir);
    try {
      const s = script(7, 6, 23);
      const frames = (r: TalkerRunner, id: string) => {
        const out = [r.execute([{ seqId: id, rows: s.prompt, numRows: s.numPrompt, sampling: sampling() }])[0]];
        for (let f = 1; f < 6; f++)
          out.push(
            r.execute([{ seqId: id, rows: s.text.subarray(f * C, (f + 1) * C), numRows: 1, sampling: sampling() }])[0],
          );
        r.free(id);
        return out.map((o) => o.codes.join(','));
      };
      expect(frames(foreign, 'foreign')).toEqual(frames(runner, 'generated'));
    } finally {
      await foreign.close();
    }
  });

  it('reports KV bytes per sequence and frees them', () => {
    runner.execute([{ seqId: 'kv', rows: rows(3, 13), numRows: 3, sampling: sampling() }]);
    expect(runner.kvBytes('kv')).toBeGreaterThan(0);
    runner.free('kv');
    expect(runner.kvBytes('kv')).toBe(0);
  });

  it('a warm-up leaves no sequence behind and changes no request frames', () => {
    const first = runner.execute([{ seqId: 'w1', rows: rows(3, 21), numRows: 3, sampling: sampling() }]);
    runner.free('w1');
    runner.warm();
    expect(runner.kvBytes(WARMUP_SEQ)).toBe(0);
    const again = runner.execute([{ seqId: 'w2', rows: rows(3, 21), numRows: 3, sampling: sampling() }]);
    runner.free('w2');
    expect(again[0].codes).toEqual(first[0].codes);
  });
});
