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
 *
 * One pass is not a measurement: the first pass on fresh sessions pays onnxruntime's arena growth and the JIT, and
 * on a shared machine a pass loses the core to other work for part of its run (a single cold pass once put batch
 * 10 at half of batch 4). So the same runners run `warmup` unmeasured passes of every batch, then `repeats`
 * measured rounds, each round one pass of every batch in turn, and a stage's time is its wall time less the time
 * the thread that runs the models (onnxruntime runs on the calling thread with 1 intra-op thread, and never sleeps
 * in a pass) waited in the run queue while other processes had the cores: its on-CPU time (Linux's run_delay in
 * /proc/thread-self/schedstat, exact when read by the running thread, where its on-CPU counter only moves at
 * scheduler ticks; the wall clock where there is no such file). Not the process's CPU time: V8's helper threads
 * (concurrent GC) add ~60% to it on this machine, and the stages' steps do not wait for them. Other processes still
 * slow the thread through the shared caches (bench/README.md, "Throughput limit"). Each stage counts its least over
 * the repeats; the medians, and the wall times, are kept beside it.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import {
  type CodecChunkOut,
  concatFloat32,
  initialChunkFrames,
  type SamplingParams,
  type StageGraph,
  Talker2Code2Wav,
  Thinker2Talker,
} from '../../src/index.ts';
import { closeRunners, limitSampling, openRunners, templatedPrompts } from './runLimit.ts';
import type { PacketSampling, Runners } from './runLimit.ts';
import {
  summarizeThroughput,
  throughputEnvelope,
  type ThroughputLimit,
  type ThroughputPass,
} from './throughputLimit.ts';

export interface ThroughputOptions {
  readonly graph: StageGraph;
  readonly inputLen: number;
  /** Text tokens per answer (the bench's --output-len, answered with ignore_eos). */
  readonly outputLen: number;
  /** Requests run together: one limit per batch (the concurrencies). */
  readonly batches: readonly number[];
  readonly seed?: number;
  /** Measured passes of each batch (default 5) after `warmup` unmeasured ones (default 1), on the same runners. */
  readonly repeats?: number;
  readonly warmup?: number;
}

/** The limit of every batch in `o.batches` (sorted, each raised to the best smaller batch by throughputEnvelope). */
export async function runThroughputLimits(o: ThroughputOptions): Promise<ThroughputLimit[]> {
  const g = o.graph;
  const batches = [...new Set(o.batches)].sort((a, b) => a - b);
  const prompts = templatedPrompts(g, batches.at(-1)!, o.inputLen, o.seed);
  const r = await openRunners(g);
  try {
    const sampling = limitSampling(g);
    const warmup = o.warmup ?? 1;
    const repeats = o.repeats ?? 5;
    const passes = batches.map((): { cpu: ThroughputPass; wall: ThroughputPass }[] => []);
    for (let n = 0; n < warmup + repeats; n++)
      batches.forEach((batch, b) =>
        passes[b].push(onePass(r, g, prompts.slice(0, batch), o.outputLen, sampling, `throughput-${batch}-${n}`)),
      );
    const cores = os.availableParallelism();
    return throughputEnvelope(
      batches.map((batch, b) => summarizeThroughput(batch, o.outputLen, passes[b], warmup, cores)),
    );
  } finally {
    await closeRunners(r);
  }
}

/** The whole work of the batch once, stage after stage, on fresh sequences (freed at the end): CPU and wall ms. */
function onePass(
  r: Runners,
  g: StageGraph,
  prompts: readonly (readonly number[])[],
  outputLen: number,
  sampling: PacketSampling,
  run: string,
): { cpu: ThroughputPass; wall: ThroughputPass } {
  const { thinker, talker, code2wav } = r;
  const cpu: number[] = [];
  const wall: number[] = [];
  let { queuedMs: queued0, atMs: wall0 } = queueAndClock(runQueueMs, () => performance.now());
  const lap = () => {
    const { queuedMs: queued1, atMs: wall1 } = queueAndClock(runQueueMs, () => performance.now());
    wall.push(wall1 - wall0);
    cpu.push(wall1 - wall0 - (queued1 === null || queued0 === null ? 0 : queued1 - queued0));
    [queued0, wall0] = [queued1, wall1];
  };
  const ids = prompts.map((_, i) => `${run}-${i}`);
  try {
    lap(); // from here: the Thinker
    const allRows = thinkerPass(r, ids, prompts, outputLen, sampling.thinker);
    lap();
    const ic = initialChunkFrames(g.chunkPolicy, prompts.length);
    const toCode2Wav = prompts.map(() => new Talker2Code2Wav(g.chunkPolicy, talker.numCodebooks, ic, true));
    lap(); // from here: the Talker
    const chunks = talkerPass(r, ids, allRows, prompts[0].length, outputLen, toCode2Wav, sampling.talker);
    lap();
    lap(); // from here: Code2Wav
    // The i-th chunk of every request together, as the stage batches them.
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
    lap();
    // Laps 1, 3, 5 are the stages (0, 2, 4 the bookkeeping between them).
    const of = (xs: number[]) => ({ thinker_ms: xs[1], talker_ms: xs[3], code2wav_ms: xs[5] });
    return { cpu: of(cpu), wall: of(wall) };
  } finally {
    for (const id of ids) {
      thinker.free(id);
      talker.free(id);
      code2wav.free(id);
    }
  }
}

/** 1. Thinker: every token of every answer; the rows the Talker is conditioned on, by its own processor. */
function thinkerPass(
  r: Runners,
  ids: readonly string[],
  prompts: readonly (readonly number[])[],
  outputLen: number,
  sampling: SamplingParams,
): Float32Array[] {
  const p = prompts[0].length;
  const toTalker = prompts.map(() => new Thinker2Talker(r.thinker.hiddenSize, p, true));
  const rows: Float32Array[][] = prompts.map(() => []);
  const tokens = new Array<number>(prompts.length).fill(-1);
  for (let step = 0; step < outputLen; step++) {
    const outs = r.thinker.execute(
      ids.map((seqId, i) => ({
        seqId,
        tokenIds: step === 0 ? prompts[i] : [tokens[i]],
        numTokens: step === 0 ? p : 1,
        sample: true,
        sampling,
      })),
    );
    outs.forEach((out, i) => {
      tokens[i] = out.tokenId!;
      const [at, count] = step === 0 ? [0, p] : [p + step - 1, 1];
      toTalker[i].onStep(at, count, out.embeds, out.hidden, r.thinker.embed([tokens[i]]));
      const c = toTalker[i].take(false);
      if (c) rows[i].push(c.rows);
    });
  }
  return rows.map((x) => concatFloat32(x));
}

/** 2. Talker: every frame; chunks for Code2Wav as the chunk policy cuts them. */
function talkerPass(
  r: Runners,
  ids: readonly string[],
  allRows: readonly Float32Array[],
  p: number,
  outputLen: number,
  toCode2Wav: readonly Talker2Code2Wav[],
  sampling: SamplingParams,
): CodecChunkOut[][] {
  const { framesPerToken: fpt, conditionDim: dim } = r.talker;
  const frames = outputLen * fpt;
  const chunks: CodecChunkOut[][] = ids.map(() => []);
  for (let k = 0; k < frames; k++) {
    const at = p + Math.floor(k / fpt);
    const row = (i: number) =>
      k === 0 ? allRows[i].subarray(0, (p + 1) * dim) : allRows[i].subarray(at * dim, (at + 1) * dim);
    const outs = r.talker.execute(
      ids.map((seqId, i) => ({ seqId, rows: row(i), numRows: k === 0 ? p + 1 : 1, sampling })),
    );
    outs.forEach((out, i) => {
      toCode2Wav[i].push(out.codes);
      const c = toCode2Wav[i].take(k === frames - 1);
      if (c) chunks[i].push(c);
    });
  }
  return chunks;
}

/**
 * The run-queue wait and the clock as of one moment. The kernel adds a wait to run_delay when it ends, so a thread
 * preempted between reading the one and the other charged that wait to the next lap while the clock had not seen it:
 * a Code2Wav lap of ~4 ms came out at -7.86 ms of CPU (issue 46, load 4-13), and the least over the passes took it.
 * Read the wait on both sides of the clock until no wait ended in between (a few tries; the last read otherwise).
 */
export function queueAndClock(
  readQueueMs: () => number | null,
  readClockMs: () => number,
  tries = 5,
): { queuedMs: number | null; atMs: number } {
  let before = readQueueMs();
  for (let i = 1; ; i++) {
    const atMs = readClockMs();
    const after = readQueueMs();
    if (after === before || i >= tries) return { queuedMs: after, atMs };
    before = after;
  }
}

/** How long the calling thread has waited for a CPU while runnable, ms (Linux: schedstat's run_delay); else null. */
function runQueueMs(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return null;
  }
}
