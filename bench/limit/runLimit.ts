/**
 * The critical-path limit of the first audio packet: the model work the pipeline cannot avoid before the first
 * audio exists, run directly on the runners in one process (no stage processes, no transport, no server):
 *
 *   Thinker prefill of the templated prompt (samples token 0)
 *   + Thinker decode steps until the rows of the initial chunk's frames exist (one step for IC 4 at 2 frames/token)
 *   + Talker prefill (prompt rows + token 0's row; samples frame 0) + one step per further frame of the IC
 *   + Code2Wav of the initial chunk.
 *
 * Rows and codec chunks are built by the runtime's own processors (Thinker2Talker, Talker2Code2Wav), so the shapes
 * are exactly what the stages compute. The steps run one after another; in the pipeline the Thinker's decode
 * overlaps the Talker's prefill, so the sum is a slightly pessimistic limit (the decode step is listed apart).
 */
import type { StageGraph, StageSpec } from '../../src/config/types.ts';
import { ChorusError, ErrorCodes } from '../../src/errors.ts';
import { initialChunkFrames } from '../../src/sched/chunkPolicy.ts';
import { Talker2Code2Wav } from '../../stages/processors/talker2code2wav.ts';
import { Thinker2Talker } from '../../stages/processors/thinker2talker.ts';
import { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { createTokenizer } from '../../stages/tokenizer/index.ts';
import type { Code2WavRunner, SamplingParams, TalkerRunner, ThinkerRunner } from '../../stages/types.ts';
import { percentile } from '../ttfp/metrics.ts';
import { makePrompts } from '../ttfp/prompts.ts';

export interface LimitOptions {
  readonly graph: StageGraph;
  /** Tokens of user content (the chat template adds its own, as in the bench). */
  readonly inputLen: number;
  /** Measured runs (default 20) after `warmup` unmeasured ones (default 3). */
  readonly repeats?: number;
  readonly warmup?: number;
  readonly seed?: number;
  /** The initial chunk; default what the chunk policy picks for a lone request (the c=1 case). */
  readonly initialChunkFrames?: number;
}

export interface LimitParts {
  readonly thinker_prefill_ms: number;
  readonly thinker_decode_ms: number;
  readonly talker_prefill_ms: number;
  readonly talker_decode_ms: number;
  readonly code2wav_ms: number;
  readonly total_ms: number;
}

export interface LimitResult {
  readonly prompt_tokens: number;
  readonly input_len: number;
  readonly initial_chunk_frames: number;
  readonly thinker_decode_steps: number;
  readonly talker_decode_steps: number;
  readonly repeats: number;
  /** Medians over the repeats, part by part (so the parts need not add up to total exactly). */
  readonly median: LimitParts;
  readonly p99_total_ms: number;
  readonly min_total_ms: number;
}

interface Runners {
  readonly thinker: ThinkerRunner;
  readonly talker: TalkerRunner;
  readonly code2wav: Code2WavRunner;
}

function stageOf(graph: StageGraph, kind: StageSpec['kind']): StageSpec {
  const s = graph.stages.find((x) => x.kind === kind);
  if (!s) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `${graph.file} has no ${kind} stage: the limit needs thinker -> talker -> code2wav`);
  return s;
}

export async function runLimit(o: LimitOptions): Promise<LimitResult> {
  const g = o.graph;
  const [thinkerSpec, talkerSpec, code2wavSpec] = [stageOf(g, 'thinker'), stageOf(g, 'talker'), stageOf(g, 'code2wav')];
  const thinkerSize = thinkerSpec.model.source === 'generated' && thinkerSpec.model.kind === 'thinker' ? thinkerSpec.model.size : undefined;
  const tokenizer = createTokenizer(thinkerSpec.model, thinkerSize);
  const [content] = makePrompts({ tokenizer, count: 1, inputLen: o.inputLen, seed: o.seed ?? 0 });
  const promptIds = tokenizer.applyChatTemplate([{ role: 'user', content }]);

  const runners: Runners = {
    thinker: await createThinkerRunner(thinkerSpec, g.modelsDir),
    talker: await createTalkerRunner(talkerSpec, g.modelsDir),
    code2wav: await createCode2WavRunner(code2wavSpec, g.modelsDir),
  };
  try {
    const ic = o.initialChunkFrames ?? initialChunkFrames(g.chunkPolicy, 1);
    const sampling = {
      thinker: { ...thinkerSpec.defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 },
      talker: { ...talkerSpec.defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 },
    };
    const runs: LimitParts[] = [];
    const repeats = o.repeats ?? 20;
    const warmup = o.warmup ?? 3;
    for (let i = 0; i < warmup + repeats; i++) {
      const parts = firstPacket(runners, g, promptIds, ic, sampling, `limit-${i}`);
      if (i >= warmup) runs.push(parts);
    }
    const med = (k: keyof LimitParts) => percentile(runs.map((r) => r[k]), 50);
    const totals = runs.map((r) => r.total_ms);
    const fpt = runners.talker.framesPerToken;
    return {
      prompt_tokens: promptIds.length,
      input_len: o.inputLen,
      initial_chunk_frames: ic,
      thinker_decode_steps: Math.floor((ic - 1) / fpt),
      talker_decode_steps: ic - 1,
      repeats,
      median: {
        thinker_prefill_ms: med('thinker_prefill_ms'),
        thinker_decode_ms: med('thinker_decode_ms'),
        talker_prefill_ms: med('talker_prefill_ms'),
        talker_decode_ms: med('talker_decode_ms'),
        code2wav_ms: med('code2wav_ms'),
        total_ms: med('total_ms'),
      },
      p99_total_ms: percentile(totals, 99),
      min_total_ms: Math.min(...totals),
    };
  } finally {
    await Promise.all([runners.thinker.close(), runners.talker.close(), runners.code2wav.close()]);
  }
}

/** One first packet, timed part by part. */
function firstPacket(
  r: Runners,
  g: StageGraph,
  promptIds: readonly number[],
  ic: number,
  sampling: { thinker: SamplingParams; talker: SamplingParams },
  seqId: string,
): LimitParts {
  const p = promptIds.length;
  const fpt = r.talker.framesPerToken;
  const toTalker = new Thinker2Talker(r.thinker.hiddenSize, p, true);
  const toCode2Wav = new Talker2Code2Wav(g.chunkPolicy, r.talker.numCodebooks, ic, true);
  const rows: Float32Array[] = [];
  const take = () => {
    const c = toTalker.take(false);
    if (c) rows.push(c.rows);
  };
  try {
    // 1. Thinker: prefill samples token 0; each decode step feeds the last token and samples the next.
    let t = performance.now();
    let out = r.thinker.execute([{ seqId, tokenIds: promptIds, numTokens: p, sample: true, sampling: sampling.thinker }])[0];
    toTalker.onStep(0, p, out.embeds, out.hidden, r.thinker.embed([out.tokenId!]));
    take();
    const thinkerPrefillMs = performance.now() - t;
    // Frame k >= 1 (position p + k) reads the row of token floor(k / fpt): the IC needs tokens 0..floor((ic-1)/fpt).
    t = performance.now();
    for (let step = 0; step < Math.floor((ic - 1) / fpt); step++) {
      out = r.thinker.execute([{ seqId, tokenIds: [out.tokenId!], numTokens: 1, sample: true, sampling: sampling.thinker }])[0];
      toTalker.onStep(p + step, 1, out.embeds, out.hidden, r.thinker.embed([out.tokenId!]));
      take();
    }
    const thinkerDecodeMs = performance.now() - t;
    const allRows = concat(rows);
    const dim = r.talker.conditionDim;
    const row = (i: number) => allRows.subarray(i * dim, (i + 1) * dim);

    // 2. Talker: prefill over positions 0..p (prompt rows + token 0's row) samples frame 0; then one frame per step.
    t = performance.now();
    let frame = r.talker.execute([{ seqId, rows: allRows.subarray(0, (p + 1) * dim), numRows: p + 1, sampling: sampling.talker }])[0];
    toCode2Wav.push(frame.codes);
    const talkerPrefillMs = performance.now() - t;
    t = performance.now();
    for (let k = 1; k < ic; k++) {
      frame = r.talker.execute([{ seqId, rows: row(p + Math.floor(k / fpt)), numRows: 1, sampling: sampling.talker }])[0];
      toCode2Wav.push(frame.codes);
    }
    const chunk = toCode2Wav.take(false);
    const talkerDecodeMs = performance.now() - t;
    if (!chunk) throw new ChorusError(ErrorCodes.STAGE_FAILED, `the initial chunk of ${ic} frames did not form`);

    // 3. Code2Wav of the initial chunk.
    t = performance.now();
    const [pcm] = r.code2wav.decode([{ seqId, codes: chunk.codes, numFrames: chunk.numFrames, contextFrames: chunk.contextFrames }]);
    const code2wavMs = performance.now() - t;
    if (pcm.length === 0) throw new ChorusError(ErrorCodes.STAGE_FAILED, 'code2wav returned no audio for the initial chunk');
    return {
      thinker_prefill_ms: thinkerPrefillMs,
      thinker_decode_ms: thinkerDecodeMs,
      talker_prefill_ms: talkerPrefillMs,
      talker_decode_ms: talkerDecodeMs,
      code2wav_ms: code2wavMs,
      total_ms: thinkerPrefillMs + thinkerDecodeMs + talkerPrefillMs + talkerDecodeMs + code2wavMs,
    };
  } finally {
    r.thinker.free(seqId);
    r.talker.free(seqId);
  }
}

function concat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of parts) {
    out.set(x, at);
    at += x.length;
  }
  return out;
}

export function formatLimit(r: LimitResult): string {
  const m = r.median;
  const rows: [string, number][] = [
    [`thinker prefill (${r.prompt_tokens} tokens)`, m.thinker_prefill_ms],
    [`thinker decode (${r.thinker_decode_steps} step${r.thinker_decode_steps === 1 ? '' : 's'})`, m.thinker_decode_ms],
    [`talker prefill (${r.prompt_tokens + 1} rows, frame 0)`, m.talker_prefill_ms],
    [`talker frames 1..${r.initial_chunk_frames - 1} (${r.talker_decode_steps} steps)`, m.talker_decode_ms],
    [`code2wav (${r.initial_chunk_frames} frames)`, m.code2wav_ms],
    ['limit (sum)', m.total_ms],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    `critical path of the first audio packet: medians of ${r.repeats} runs on the runners, one process, no runtime (IC ${r.initial_chunk_frames} frames)`,
    ...rows.map(([label, ms]) => `  ${label.padEnd(width)}  ${ms.toFixed(2).padStart(8)} ms`),
    `  (limit min ${r.min_total_ms.toFixed(2)} ms, p99 ${r.p99_total_ms.toFixed(2)} ms)`,
  ].join('\n');
}
