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
import {
  ChorusError,
  type Code2WavRunner,
  concatFloat32,
  CpuWakeupLatency,
  createCode2WavRunner,
  createTalkerRunner,
  createThinkerRunner,
  entryTokenizer,
  ErrorCodes,
  logger,
  initialChunkFrames,
  type SamplingParams,
  type StageGraph,
  type StageSpec,
  Talker2Code2Wav,
  type TalkerRunner,
  Thinker2Talker,
  type ThinkerRunner,
} from '../../src/index.ts';
import { percentile } from '../ttfp/metrics.ts';
import { makePrompts } from '../ttfp/prompts.ts';
import type { LimitParts, LimitResult } from './limitResult.ts';

/** The runners a limit runs on, in this process. */
export interface Runners {
  readonly thinker: ThinkerRunner;
  readonly talker: TalkerRunner;
  readonly code2wav: Code2WavRunner;
}

export interface PacketSampling {
  readonly thinker: SamplingParams;
  readonly talker: SamplingParams;
}

export interface LimitOptions {
  readonly graph: StageGraph;
  /** Tokens of user content (the chat template adds its own, as in the bench). */
  readonly inputLen: number;
  /** Measured runs (default 20) after `warmup` unmeasured ones (default 3). */
  readonly repeats?: number;
  readonly warmup?: number;
  readonly seed?: number;
  /**
   * Sequences that arrive together and run as one batch through every step (default 1, a lone request). A
   * burst of c requests cannot see its first packets earlier than this limit at batch c.
   */
  readonly batch?: number;
  /** The initial chunk; default what the chunk policy picks when `batch` requests are running. */
  readonly initialChunkFrames?: number;
}

/** The graph's stage of that kind (the limits need thinker -> talker -> code2wav). */
export function stageOf(graph: StageGraph, kind: StageSpec['kind']): StageSpec {
  const s = graph.stages.find((x) => x.kind === kind);
  if (!s)
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `${graph.file} has no ${kind} stage: the limit needs thinker -> talker -> code2wav`,
    );
  return s;
}

/**
 * The bench's own first `count` prompts (same seed) as the server templates them, so the limits compute exactly what
 * the bench's requests need.
 */
export function templatedPrompts(g: StageGraph, count: number, inputLen: number, seed = 0): number[][] {
  const tokenizer = entryTokenizer(g);
  const contents = makePrompts({ tokenizer, count, inputLen, seed });
  return contents.map((content) => tokenizer.applyChatTemplate([{ role: 'user', content }]));
}

export async function runLimit(o: LimitOptions): Promise<LimitResult> {
  const sampler = await LimitSampler.open(o);
  try {
    sampler.measure(o.repeats ?? 20, o.warmup ?? 3);
    return sampler.result();
  } finally {
    await sampler.close();
  }
}

/**
 * A limit whose runners stay open, so its packet can be measured again and again over a run (the bench measures the
 * c=1 limit before the runs, between its c=1 blocks and after them: the machine's speed drifts by a third within
 * minutes even quiet, so a limit taken only around the run compares TTFP with another minute's machine). Every
 * measured packet counts alike: the result is the median over all of them, part by part.
 */
export class LimitSampler {
  private readonly runs: LimitParts[] = [];
  private readonly sampling: PacketSampling;
  private packets = 0;
  /** The machine's CPU wake-up latency as the config asks the server to hold it, held while this measures. */
  private readonly wakeups: CpuWakeupLatency | null;

  private constructor(
    private readonly o: LimitOptions,
    private readonly runners: Runners,
    private readonly prompts: readonly (readonly number[])[],
    private readonly ic: number,
  ) {
    this.sampling = limitSampling(o.graph);
    const log = logger.child({ component: 'limit' });
    this.wakeups = CpuWakeupLatency.asked(o.graph.cpuWakeupLatencyUs, log, { lingerMs: 0 });
  }

  static async open(o: LimitOptions): Promise<LimitSampler> {
    const batch = o.batch ?? 1;
    const prompts = templatedPrompts(o.graph, batch, o.inputLen, o.seed);
    const ic = o.initialChunkFrames ?? initialChunkFrames(o.graph.chunkPolicy, batch);
    return new LimitSampler(o, await openRunners(o.graph), prompts, ic);
  }

  /** `warmup` unmeasured then `repeats` measured packets, back to back: this measure's medians and its packets. */
  measure(repeats: number, warmup: number): { median: LimitParts; packets: readonly LimitParts[] } {
    const packet = () =>
      firstPacket(this.runners, this.o.graph, this.prompts, this.ic, this.sampling, `limit-${this.packets++}`);
    this.wakeups?.busy();
    let runs: LimitParts[];
    try {
      runs = timeRepeats(warmup, repeats, packet);
    } finally {
      this.wakeups?.idle();
    }
    this.runs.push(...runs);
    return { median: medianParts(runs), packets: runs };
  }

  /** The limit over `packets` (some of this sampler's), by default every packet measured so far. */
  result(packets: readonly LimitParts[] = this.runs): LimitResult {
    const totals = packets.map((r) => r.total_ms);
    return {
      batch: this.prompts.length,
      prompt_tokens: this.prompts[0].length,
      input_len: this.o.inputLen,
      initial_chunk_frames: this.ic,
      thinker_decode_steps: thinkerDecodeSteps(this.runners, this.ic),
      talker_decode_steps: this.ic - 1,
      repeats: packets.length,
      median: medianParts(packets),
      p99_total_ms: percentile(totals, 99),
      min_total_ms: Math.min(...totals),
    };
  }

  close(): Promise<void> {
    this.wakeups?.close();
    return closeRunners(this.runners);
  }
}

/** The runners of the graph's Thinker, Talker and Code2Wav, in this process. */
export async function openRunners(g: StageGraph): Promise<Runners> {
  const [thinkerSpec, talkerSpec, code2wavSpec] = [stageOf(g, 'thinker'), stageOf(g, 'talker'), stageOf(g, 'code2wav')];
  return {
    thinker: await createThinkerRunner(thinkerSpec, g.modelsDir),
    talker: await createTalkerRunner(talkerSpec, g.modelsDir),
    code2wav: await createCode2WavRunner(code2wavSpec, g.modelsDir),
  };
}

/** The stages' default sampling, never stopping early: every run computes the same number of steps. */
export function limitSampling(g: StageGraph): PacketSampling {
  return {
    thinker: { ...stageOf(g, 'thinker').defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 },
    talker: { ...stageOf(g, 'talker').defaultSamplingParams, ignoreEos: true, maxTokens: 1 << 20 },
  };
}

/** Thinker decode steps after its prefill before the initial chunk's rows exist (frame k reads token k / fpt). */
function thinkerDecodeSteps(r: Runners, ic: number): number {
  return Math.floor((ic - 1) / r.talker.framesPerToken);
}

/** `warmup` unmeasured then `repeats` measured runs of `packet`. */
function timeRepeats(warmup: number, repeats: number, packet: () => LimitParts): LimitParts[] {
  const runs: LimitParts[] = [];
  for (let i = 0; i < warmup + repeats; i++) {
    const parts = packet();
    if (i >= warmup) runs.push(parts);
  }
  return runs;
}

/** The median of each part over the runs (so the parts need not add up to the total's median exactly). */
function medianParts(runs: readonly LimitParts[]): LimitParts {
  const med = (k: keyof LimitParts) =>
    percentile(
      runs.map((r) => r[k] ?? Number.NaN),
      50,
    );
  return {
    thinker_prefill_ms: med('thinker_prefill_ms'),
    thinker_decode_ms: med('thinker_decode_ms'),
    talker_prefill_ms: med('talker_prefill_ms'),
    talker_decode_ms: med('talker_decode_ms'),
    code2wav_ms: med('code2wav_ms'),
    total_ms: med('total_ms'),
    cpu_ms: med('cpu_ms'),
  };
}

export async function closeRunners(r: Runners): Promise<void> {
  await Promise.all([r.thinker.close(), r.talker.close(), r.code2wav.close()]);
}

/** The first packet of `prompts.length` sequences run as one batch (1 = a lone request), timed part by part. */
export function firstPacket(
  r: Runners,
  g: StageGraph,
  prompts: readonly (readonly number[])[],
  ic: number,
  sampling: PacketSampling,
  run: string,
): LimitParts {
  const p = prompts[0].length; // every prompt has the same length (inputLen tokens + the template)
  const seqs = prompts.map((promptIds, i) => packetSeq(r, g, `${run}-${i}`, promptIds, p, ic));
  const cpu0 = process.cpuUsage();
  try {
    const thinker = thinkerPart(r, seqs, p, ic, sampling);
    const talker = talkerPart(r, seqs, p, ic, sampling);
    const code2wavMs = code2wavPart(r, seqs, talker.chunks);
    const cpu = process.cpuUsage(cpu0);
    return {
      thinker_prefill_ms: thinker.prefillMs,
      thinker_decode_ms: thinker.decodeMs,
      talker_prefill_ms: talker.prefillMs,
      talker_decode_ms: talker.decodeMs,
      code2wav_ms: code2wavMs,
      total_ms: thinker.prefillMs + thinker.decodeMs + talker.prefillMs + talker.decodeMs + code2wavMs,
      cpu_ms: (cpu.user + cpu.system) / 1000,
    };
  } finally {
    for (const s of seqs) {
      r.thinker.free(s.seqId);
      r.talker.free(s.seqId);
      r.code2wav.free(s.seqId);
    }
  }
}

/** One sequence of a first-packet batch: its prompt and the processors between the stages. */
function packetSeq(r: Runners, g: StageGraph, seqId: string, promptIds: readonly number[], p: number, ic: number) {
  return {
    seqId,
    promptIds,
    toTalker: new Thinker2Talker(r.thinker.hiddenSize, p, true),
    toCode2Wav: new Talker2Code2Wav(g.chunkPolicy, r.talker.numCodebooks, ic, true),
    rows: [] as Float32Array[],
    token: -1,
  };
}

type PacketSeq = ReturnType<typeof packetSeq>;

/** 1. Thinker: prefill samples token 0; each decode step feeds the last token and samples the next. */
function thinkerPart(r: Runners, seqs: readonly PacketSeq[], p: number, ic: number, sampling: PacketSampling) {
  const stepAll = (tokens: (s: PacketSeq) => readonly number[], at: (s: PacketSeq) => number) => {
    const outs = r.thinker.execute(
      seqs.map((s) => ({
        seqId: s.seqId,
        tokenIds: tokens(s),
        numTokens: tokens(s).length,
        sample: true,
        sampling: sampling.thinker,
      })),
    );
    seqs.forEach((s, i) => {
      const start = at(s);
      const count = tokens(s).length;
      s.token = outs[i].tokenId!;
      s.toTalker.onStep(start, count, outs[i].embeds, outs[i].hidden, r.thinker.embed([s.token]));
      const c = s.toTalker.take(false);
      if (c) s.rows.push(c.rows);
    });
  };
  let t = performance.now();
  stepAll(
    (s) => s.promptIds,
    () => 0,
  );
  const prefillMs = performance.now() - t;
  // Frame k >= 1 (position p + k) reads the row of token floor(k / fpt): the IC needs tokens 0..floor((ic-1)/fpt).
  t = performance.now();
  for (let step = 0; step < thinkerDecodeSteps(r, ic); step++)
    stepAll(
      (s) => [s.token],
      () => p + step,
    );
  return { prefillMs, decodeMs: performance.now() - t };
}

/**
 * 2. Talker: prefill over positions 0..p (prompt rows + token 0's row) samples frame 0; then one frame per step
 * (position k's row is allRows' row k).
 */
function talkerPart(r: Runners, seqs: readonly PacketSeq[], p: number, ic: number, sampling: PacketSampling) {
  const dim = r.talker.conditionDim;
  const allRows = seqs.map((s) => concatFloat32(s.rows));
  const step = (rowsOf: (s: PacketSeq, i: number) => Float32Array) => {
    const frames = r.talker.execute(
      seqs.map((s, i) => ({
        seqId: s.seqId,
        rows: rowsOf(s, i),
        numRows: rowsOf(s, i).length / dim,
        sampling: sampling.talker,
      })),
    );
    seqs.forEach((s, i) => s.toCode2Wav.push(frames[i].codes));
  };
  let t = performance.now();
  step((_, i) => allRows[i].subarray(0, (p + 1) * dim));
  const prefillMs = performance.now() - t;
  t = performance.now();
  for (let k = 1; k < ic; k++) {
    const at = p + Math.floor(k / r.talker.framesPerToken);
    step((_, i) => allRows[i].subarray(at * dim, (at + 1) * dim));
  }
  const chunks = seqs.map((s) => s.toCode2Wav.take(false));
  const decodeMs = performance.now() - t;
  if (chunks.some((c) => c === null))
    throw new ChorusError(ErrorCodes.STAGE_FAILED, `the initial chunk of ${ic} frames did not form`);
  return { prefillMs, decodeMs, chunks: chunks.map((c) => c!) };
}

/** 3. Code2Wav of the initial chunks. */
function code2wavPart(
  r: Runners,
  seqs: readonly PacketSeq[],
  chunks: readonly NonNullable<ReturnType<Talker2Code2Wav['take']>>[],
): number {
  const t = performance.now();
  const pcm = r.code2wav.decode(
    seqs.map((s, i) => ({
      seqId: s.seqId,
      codes: chunks[i].codes,
      numFrames: chunks[i].numFrames,
      contextFrames: chunks[i].contextFrames,
    })),
  );
  const code2wavMs = performance.now() - t;
  if (pcm.some((x) => x.length === 0))
    throw new ChorusError(ErrorCodes.STAGE_FAILED, 'code2wav returned no audio for an initial chunk');
  return code2wavMs;
}
