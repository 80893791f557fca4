/**
 * The throughput limit: the whole compute of c requests run together, straight on the runners in one process (no
 * stage processes, no transport, no server), stage by stage at batch c:
 *
 *   Thinker prefill + (output_len - 1) decode steps
 *   + Talker prefill + one step per further codec frame (output_len x frames per token)
 *   + Code2Wav of every chunk the chunk policy makes (left context included, as the stage decodes it).
 *
 * In the pipeline the stages run side by side on the machine's cores, so c requests cannot finish faster than
 * max(the slowest stage, the sum over the cores): that bound, in requests per second, is what req/s at
 * concurrency c is compared with. Rows and chunks come from the runtime's own processors, as in runLimit.ts.
 */
import os from 'node:os';
import type { StageGraph } from '../../src/common/graph.ts';
import { initialChunkFrames } from '../../src/sched/chunkPolicy.ts';
import { Talker2Code2Wav, type CodecChunkOut } from '../../stages/processors/talker2code2wav.ts';
import { Thinker2Talker } from '../../stages/processors/thinker2talker.ts';
import { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { createTokenizer } from '../../stages/tokenizer/index.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import { makePrompts } from '../ttfp/prompts.ts';

export interface ThroughputOptions {
  readonly graph: StageGraph;
  readonly inputLen: number;
  /** Text tokens per answer (the bench's --output-len, answered with ignore_eos). */
  readonly outputLen: number;
  /** Requests run together (the concurrency). */
  readonly batch: number;
  readonly seed?: number;
}

export interface ThroughputLimit {
  readonly batch: number;
  readonly output_len: number;
  /** Wall time of each stage's whole work for the batch, ms. */
  readonly thinker_ms: number;
  readonly talker_ms: number;
  readonly code2wav_ms: number;
  /** Cores the stages can share. */
  readonly cores: number;
  /** max(slowest stage, sum / cores): the least time the batch takes in the pipeline, ms. */
  readonly bound_ms: number;
  /** batch / bound: requests per second the models allow at this concurrency on this machine. */
  readonly limit_rps: number;
}

export async function runThroughputLimit(o: ThroughputOptions): Promise<ThroughputLimit> {
  const g = o.graph;
  const spec = (kind: 'thinker' | 'talker' | 'code2wav') => {
    const s = g.stages.find((x) => x.kind === kind);
    if (!s) throw new Error(`the throughput limit needs a ${kind} stage`);
    return s;
  };
  const [thinkerSpec, talkerSpec, code2wavSpec] = [spec('thinker'), spec('talker'), spec('code2wav')];
  const size =
    thinkerSpec.model.source === 'generated' && thinkerSpec.model.kind === 'thinker'
      ? thinkerSpec.model.size
      : undefined;
  const tokenizer = createTokenizer(thinkerSpec.model, size);
  const contents = makePrompts({ tokenizer, count: o.batch, inputLen: o.inputLen, seed: o.seed ?? 0 });
  const prompts = contents.map((content) => tokenizer.applyChatTemplate([{ role: 'user', content }]));
  const thinker = await createThinkerRunner(thinkerSpec, g.modelsDir);
  const talker = await createTalkerRunner(talkerSpec, g.modelsDir);
  const code2wav = await createCode2WavRunner(code2wavSpec, g.modelsDir);
  const ids = prompts.map((_, i) => `throughput-${i}`);
  try {
    const thinkerSampling = { ...thinkerSpec.defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 };
    const talkerSampling = { ...talkerSpec.defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 };
    const p = prompts[0].length;
    const fpt = talker.framesPerToken;
    const dim = talker.conditionDim;

    // 1. Thinker: every token of every answer; the rows the Talker is conditioned on, by its own processor.
    const toTalker = prompts.map(() => new Thinker2Talker(thinker.hiddenSize, p, true));
    const rows: Float32Array[][] = prompts.map(() => []);
    const tokens = new Array<number>(o.batch).fill(-1);
    let t = performance.now();
    for (let step = 0; step < o.outputLen; step++) {
      const outs = thinker.execute(
        ids.map((seqId, i) => ({
          seqId,
          tokenIds: step === 0 ? prompts[i] : [tokens[i]],
          numTokens: step === 0 ? p : 1,
          sample: true,
          sampling: thinkerSampling,
        })),
      );
      outs.forEach((out, i) => {
        tokens[i] = out.tokenId!;
        toTalker[i].onStep(
          step === 0 ? 0 : p + step - 1,
          step === 0 ? p : 1,
          out.embeds,
          out.hidden,
          thinker.embed([tokens[i]]),
        );
        const c = toTalker[i].take(false);
        if (c) rows[i].push(c.rows);
      });
    }
    const thinkerMs = performance.now() - t;
    const allRows = rows.map((r) => concatFloat32(r));

    // 2. Talker: every frame; chunks for Code2Wav as the chunk policy cuts them.
    const frames = o.outputLen * fpt;
    const ic = initialChunkFrames(g.chunkPolicy, o.batch);
    const toCode2Wav = prompts.map(() => new Talker2Code2Wav(g.chunkPolicy, talker.numCodebooks, ic, true));
    const chunks: CodecChunkOut[][] = prompts.map(() => []);
    t = performance.now();
    for (let k = 0; k < frames; k++) {
      const row = (i: number) =>
        k === 0
          ? allRows[i].subarray(0, (p + 1) * dim)
          : allRows[i].subarray((p + Math.floor(k / fpt)) * dim, (p + Math.floor(k / fpt) + 1) * dim);
      const outs = talker.execute(
        ids.map((seqId, i) => ({ seqId, rows: row(i), numRows: k === 0 ? p + 1 : 1, sampling: talkerSampling })),
      );
      outs.forEach((out, i) => {
        toCode2Wav[i].push(out.codes);
        const c = toCode2Wav[i].take(k === frames - 1);
        if (c) chunks[i].push(c);
      });
    }
    const talkerMs = performance.now() - t;

    // 3. Code2Wav: the i-th chunk of every request together, as the stage batches them.
    t = performance.now();
    for (let n = 0; n < chunks[0].length; n++) {
      code2wav.decode(
        chunks.map((c, i) => ({
          seqId: ids[i],
          codes: c[n].codes,
          numFrames: c[n].numFrames,
          contextFrames: c[n].contextFrames,
        })),
      );
    }
    const code2wavMs = performance.now() - t;

    const cores = os.availableParallelism();
    const boundMs = Math.max(thinkerMs, talkerMs, code2wavMs, (thinkerMs + talkerMs + code2wavMs) / cores);
    return {
      batch: o.batch,
      output_len: o.outputLen,
      thinker_ms: thinkerMs,
      talker_ms: talkerMs,
      code2wav_ms: code2wavMs,
      cores,
      bound_ms: boundMs,
      limit_rps: o.batch / (boundMs / 1000),
    };
  } finally {
    for (const id of ids) {
      thinker.free(id);
      talker.free(id);
      code2wav.free(id);
    }
    await Promise.all([thinker.close(), talker.close(), code2wav.close()]);
  }
}
