/**
 * Model-layer benchmark: build time of each generated model, per-step latency of the Thinker and the
 * Talker at batch 1 and 16, Code2Wav time per 25-frame chunk (with 25 frames of left context, or from state) at batch
 * 1 and 16, and the model time of one 100-token answer with audio (Thinker 100 tokens, Talker 200 frames,
 * Code2Wav 200 frames) run stage after stage on one thread each. Model compute only: no transport.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GREEDY_SAMPLING, type GeneratedModelSpec, type SamplingParams } from '../../src/common/graph.ts';
import { ensureModel } from '../../stages/models/ensureModel.ts';
import { presets } from '../../stages/generator/presets.ts';
import { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { Prng } from '../../stages/sampling/Prng.ts';
import type { Code2WavRunner, TalkerRunner, ThinkerRunner } from '../../stages/types.ts';
import { timed, gitSha } from '../common.ts';
import { userCacheDir } from '../../src/config/paths.ts';

export interface ModelBenchOptions {
  readonly preset?: string;
  readonly threads?: number;
  readonly answerTokens?: number;
  readonly batch?: number;
  readonly seed?: number;
  /** false: the stateless vocoder (each chunk's left context decoded again), to compare with the streaming one. */
  readonly code2wavStreamingState?: boolean;
}

export interface Stats {
  readonly n: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
}

export interface ModelBenchResult {
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly node: string;
    readonly gitSha: string;
    readonly date: string;
  };
  readonly preset: string;
  readonly threads: number;
  readonly batch: number;
  readonly buildMs: Readonly<Record<'thinker' | 'talker' | 'code2wav', number>>;
  /** ms per step; a step decodes one token (Thinker) or one frame (Talker) for every sequence in the batch. */
  readonly thinker: { readonly prefill100Ms: number; readonly batch1: Stats; readonly batchN: Stats };
  readonly talker: { readonly prefill100Ms: number; readonly batch1: Stats; readonly batchN: Stats };
  /**
   * ms per decode call of 25 new frames, mid-stream: + 25 frames of left context decoded again (a stateless
   * vocoder), or from each item's state (stateful), per item batch.
   */
  readonly code2wav: {
    readonly stateful: boolean;
    readonly initial4Ms: Stats;
    readonly batch1: Stats;
    readonly batchN: Stats;
    readonly framesPerSecond1: number;
    readonly framesPerSecondN: number;
  };
  readonly answer: {
    readonly tokens: number;
    readonly frames: number;
    readonly thinkerMs: number;
    readonly talkerMs: number;
    readonly code2wavMs: number;
    readonly totalMs: number;
  };
}

const greedy: SamplingParams = { ...GREEDY_SAMPLING, maxTokens: 1 << 20, ignoreEos: true };
const PROMPT_TOKENS = 100;
const CHUNK_FRAMES = 25;
const CONTEXT_FRAMES = 25;

export function stats(samples: readonly number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, p50: at(0.5), p90: at(0.9) };
}

function promptIds(n: number): number[] {
  return Array.from({ length: n }, (_, i) => 272 + ((i * 31) % 200));
}

function randomRows(n: number, dim: number, seed: number): Float32Array {
  const rng = new Prng(seed);
  return Float32Array.from({ length: n * dim }, () => (rng.nextFloat() * 2 - 1) * 2);
}

function randomCodes(numCodebooks: number, numFrames: number, codebookSize: number, seed: number): Int32Array {
  const rng = new Prng(seed);
  return Int32Array.from({ length: numCodebooks * numFrames }, () => rng.nextUint32() % codebookSize);
}

/** Decode steps of `batch` sequences after a prefill each; returns ms per step. */
export function thinkerSteps(runner: ThinkerRunner, batch: number, steps: number, tag: string): number[] {
  const ids = Array.from({ length: batch }, (_, i) => `${tag}${i}`);
  const last = ids.map(
    (id) =>
      runner.execute([
        { seqId: id, tokenIds: promptIds(PROMPT_TOKENS), numTokens: PROMPT_TOKENS, sample: true, sampling: greedy },
      ])[0].tokenId!,
  );
  const times: number[] = [];
  for (let s = 0; s < steps; s++) {
    times.push(
      timed(() =>
        runner
          .execute(
            ids.map((id, i) => ({ seqId: id, tokenIds: [last[i]], numTokens: 1, sample: true, sampling: greedy })),
          )
          .forEach((o, i) => (last[i] = o.tokenId!)),
      ),
    );
  }
  ids.forEach((id) => runner.free(id));
  return times;
}

export function talkerSteps(runner: TalkerRunner, batch: number, steps: number, tag: string): number[] {
  const ids = Array.from({ length: batch }, (_, i) => `${tag}${i}`);
  const c = runner.conditionDim;
  ids.forEach((id, i) =>
    runner.execute([{ seqId: id, rows: randomRows(PROMPT_TOKENS, c, i), numRows: PROMPT_TOKENS, sampling: greedy }]),
  );
  const row = randomRows(1, c, 99);
  const times: number[] = [];
  for (let s = 0; s < steps; s++)
    times.push(timed(() => runner.execute(ids.map((id) => ({ seqId: id, rows: row, numRows: 1, sampling: greedy })))));
  ids.forEach((id) => runner.free(id));
  return times;
}

function code2wavCalls(
  runner: Code2WavRunner,
  codebookSize: number,
  batch: number,
  frames: number,
  context: number,
  reps: number,
): number[] {
  const items = Array.from({ length: batch }, (_, i) => ({
    seqId: `c${i}`,
    codes: randomCodes(runner.numCodebooks, frames + context, codebookSize, i),
    numFrames: frames + context,
    contextFrames: context,
  }));
  // Untimed first: a stateful vocoder then holds each item's state, as it does mid-stream, and skips the context.
  runner.decode(items);
  const times = Array.from({ length: reps }, () => timed(() => runner.decode(items)));
  for (const item of items) runner.free(item.seqId);
  return times;
}

/** One answer: Thinker prompt + tokens, Talker prompt rows + 2 frames per token, Code2Wav in streamed chunks. */
function answer(
  thinker: ThinkerRunner,
  talker: TalkerRunner,
  code2wav: Code2WavRunner,
  tokens: number,
): ModelBenchResult['answer'] {
  const generated: number[] = [];
  const thinkerMs = timed(() => {
    let next = thinker.execute([
      { seqId: 'ans', tokenIds: promptIds(PROMPT_TOKENS), numTokens: PROMPT_TOKENS, sample: true, sampling: greedy },
    ])[0].tokenId!;
    generated.push(next);
    for (let t = 1; t < tokens; t++) {
      next = thinker.execute([{ seqId: 'ans', tokenIds: [next], numTokens: 1, sample: true, sampling: greedy }])[0]
        .tokenId!;
      generated.push(next);
    }
  });
  thinker.free('ans');
  const frames = tokens * talker.framesPerToken;
  const c = talker.conditionDim;
  const codes: Int32Array[] = [];
  const talkerMs = timed(() => {
    codes.push(
      talker.execute([
        { seqId: 'ans', rows: randomRows(PROMPT_TOKENS + 1, c, 1), numRows: PROMPT_TOKENS + 1, sampling: greedy },
      ])[0].codes,
    );
    const row = randomRows(1, c, 2);
    for (let f = 1; f < frames; f++)
      codes.push(talker.execute([{ seqId: 'ans', rows: row, numRows: 1, sampling: greedy }])[0].codes);
  });
  talker.free('ans');
  const q = code2wav.numCodebooks;
  const all = new Int32Array(q * frames);
  codes.forEach((frame, t) => frame.forEach((code, k) => (all[k * frames + t] = code)));
  const code2wavMs = timed(() => {
    for (let start = 0; start < frames; start += start === 0 ? 4 : CHUNK_FRAMES) {
      const end = Math.min(frames, start + (start === 0 ? 4 : CHUNK_FRAMES));
      const from = Math.max(0, start - CONTEXT_FRAMES);
      const chunk = new Int32Array(q * (end - from));
      for (let k = 0; k < q; k++) chunk.set(all.subarray(k * frames + from, k * frames + end), k * (end - from));
      code2wav.decode([{ seqId: 'ans', codes: chunk, numFrames: end - from, contextFrames: start - from }]);
    }
  });
  code2wav.free('ans');
  return { tokens, frames, thinkerMs, talkerMs, code2wavMs, totalMs: thinkerMs + talkerMs + code2wavMs };
}

/** A preset's generated models as specs (the Talker's condition width derived from the Thinker's). */
export function presetSpecs(presetName: string, seed = 0, code2wavStreamingState?: boolean) {
  const preset = presets[presetName];
  if (!preset) throw new Error(`unknown preset ${presetName}: one of ${Object.keys(presets).join(', ')}`);
  return {
    thinker: { source: 'generated', kind: 'thinker', preset: presetName, seed, size: preset.thinker },
    talker: {
      source: 'generated',
      kind: 'talker',
      preset: presetName,
      seed,
      size: { ...preset.talker, conditionDim: 2 * preset.thinker.hiddenSize },
    },
    code2wav: {
      source: 'generated',
      kind: 'code2wav',
      preset: presetName,
      seed,
      size: { ...preset.code2wav, streamingState: code2wavStreamingState ?? preset.code2wav.streamingState },
    },
  } satisfies Record<string, GeneratedModelSpec>;
}

/** The models cache `chorus serve` builds into: benches that time steps, not builds, load from it. */
export const cachedModelsDir = () => join(userCacheDir(), 'models');

export async function runModelBench(options: ModelBenchOptions = {}): Promise<ModelBenchResult> {
  const presetName = options.preset ?? 'tiny';
  const threads = options.threads ?? 1;
  const batch = options.batch ?? 16;
  const tokens = options.answerTokens ?? 100;
  const seed = options.seed ?? 0;
  const specs = presetSpecs(presetName, seed, options.code2wavStreamingState);

  // A fresh folder, so build time is measured, not a cache hit.
  const modelsDir = mkdtempSync(join(tmpdir(), 'chorus-bench-models-'));
  try {
    const buildMs = { thinker: 0, talker: 0, code2wav: 0 };
    for (const kind of ['thinker', 'talker', 'code2wav'] as const) {
      const start = performance.now();
      await ensureModel(specs[kind], modelsDir);
      buildMs[kind] = performance.now() - start;
    }
    const engine = { threads };
    const thinker = await createThinkerRunner({ model: specs.thinker, engine }, modelsDir);
    const talker = await createTalkerRunner({ model: specs.talker, engine }, modelsDir);
    const code2wav = await createCode2WavRunner({ model: specs.code2wav, engine }, modelsDir);
    const k = specs.code2wav.size.codebookSize;
    try {
      thinkerSteps(thinker, 1, 10, 'warm'); // first-shape costs out of the figures
      const thinkerPrefill = timed(() =>
        thinker.execute([
          { seqId: 'p', tokenIds: promptIds(PROMPT_TOKENS), numTokens: PROMPT_TOKENS, sample: true, sampling: greedy },
        ]),
      );
      thinker.free('p');
      const thinkerResult = {
        prefill100Ms: thinkerPrefill,
        batch1: stats(thinkerSteps(thinker, 1, 100, 't1')),
        batchN: stats(thinkerSteps(thinker, batch, 40, 'tn')),
      };

      talkerSteps(talker, 1, 10, 'warm');
      const talkerPrefill = timed(() =>
        talker.execute([
          {
            seqId: 'p',
            rows: randomRows(PROMPT_TOKENS, talker.conditionDim, 5),
            numRows: PROMPT_TOKENS,
            sampling: greedy,
          },
        ]),
      );
      talker.free('p');
      const talkerResult = {
        prefill100Ms: talkerPrefill,
        batch1: stats(talkerSteps(talker, 1, 200, 'k1')),
        batchN: stats(talkerSteps(talker, batch, 40, 'kn')),
      };

      const c1 = stats(code2wavCalls(code2wav, k, 1, CHUNK_FRAMES, CONTEXT_FRAMES, 20));
      const cN = stats(code2wavCalls(code2wav, k, batch, CHUNK_FRAMES, CONTEXT_FRAMES, 8));
      const code2wavResult = {
        stateful: code2wav.stateful,
        initial4Ms: stats(code2wavCalls(code2wav, k, 1, 4, 0, 20)),
        batch1: c1,
        batchN: cN,
        framesPerSecond1: (CHUNK_FRAMES * 1000) / c1.p50,
        framesPerSecondN: (batch * CHUNK_FRAMES * 1000) / cN.p50,
      };
      return {
        machine: {
          cpu: cpus()[0]?.model ?? 'unknown',
          cores: cpus().length,
          node: process.version,
          gitSha: gitSha(),
          date: new Date().toISOString(),
        },
        preset: presetName,
        threads,
        batch,
        buildMs,
        thinker: thinkerResult,
        talker: talkerResult,
        code2wav: code2wavResult,
        answer: answer(thinker, talker, code2wav, tokens),
      };
    } finally {
      await Promise.all([thinker.close(), talker.close(), code2wav.close()]);
    }
  } finally {
    rmSync(modelsDir, { recursive: true, force: true });
  }
}

export function formatModelBench(r: ModelBenchResult): string {
  const f = (x: number) => x.toFixed(2);
  const s = (x: Stats) => `p50 ${f(x.p50)}  p90 ${f(x.p90)}  mean ${f(x.mean)}`;
  const b = r.batch;
  const context = r.code2wav.stateful ? 'from state' : '+25 context';
  return [
    `model bench: preset ${r.preset}, ${r.threads} thread(s) per stage; ${r.machine.cpu} x${r.machine.cores}, node ` +
      `${r.machine.node}, git ${r.machine.gitSha}, ${r.machine.date}`,
    `build (ms):        thinker ${f(r.buildMs.thinker)}  talker ${f(r.buildMs.talker)}  code2wav ` +
      `${f(r.buildMs.code2wav)}`,
    `thinker prefill ${PROMPT_TOKENS} tokens: ${f(r.thinker.prefill100Ms)} ms`,
    `thinker ms/step    batch 1:  ${s(r.thinker.batch1)}`,
    `thinker ms/step    batch ${b}: ${s(r.thinker.batchN)}  (${f(r.thinker.batchN.p50 / b)} ms/token)`,
    `talker prefill ${PROMPT_TOKENS} rows: ${f(r.talker.prefill100Ms)} ms`,
    `talker ms/frame    batch 1:  ${s(r.talker.batch1)}`,
    `talker ms/step     batch ${b}: ${s(r.talker.batchN)}  (${f(r.talker.batchN.p50 / b)} ms/frame)`,
    `code2wav first chunk (4 frames, no context): ${s(r.code2wav.initial4Ms)}`,
    `code2wav ms/25 frames (${context}) batch 1:  ${s(r.code2wav.batch1)}  ` +
      `(${r.code2wav.framesPerSecond1.toFixed(0)} frames/s)`,
    `code2wav ms/25 frames (${context}) batch ${b}: ${s(r.code2wav.batchN)}  ` +
      `(${r.code2wav.framesPerSecondN.toFixed(0)} frames/s)`,
    `one answer (${r.answer.tokens} tokens, ${r.answer.frames} frames): thinker ${f(r.answer.thinkerMs)} + talker ` +
      `${f(r.answer.talkerMs)} + code2wav ${f(r.answer.code2wavMs)} = ${f(r.answer.totalMs)} ms`,
  ].join('\n');
}
