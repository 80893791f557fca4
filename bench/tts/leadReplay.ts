/**
 * `node --import tsx bench/tts/leadReplay.ts [--config configs/assistant.yaml] [--concurrency 4] [--num-prompts 8]
 *   [--itl-ms 60] [--ttft-ms 300] [--shares 1,0.67,0.5] [--margins 0,2]` — the tts stage's underruns at concurrency
 * c on a virtual clock: the same answers, the same voice, with and without the lead rule, whatever the machine's load.
 *
 * The answers are the pipeline's own (its Thinker answers the bench's prompts, text only, once). Then a TtsCore with
 * the real voice and phonemizer replays them: `concurrency` answers at a time (closed loop: the next starts when an
 * answer's last audio is out), each answer's tokens arriving `ttft-ms` after its start and one per `itl-ms` after
 * that (the Thinker at that concurrency). Time is virtual: it advances by the CPU time the core spends (synthesis,
 * phonemes, resampling: process.cpuUsage) divided by `share`, the part of a core the stage gets (1: a core of its
 * own; 0.67: sharing two cores with the Thinker and the server), and jumps to the next token when the core is idle.
 * So the machine's load changes what a step costs a little, not whether a listener waits. Each answer's audio is
 * played as the bench's player plays it (bench/ttfp/metrics.ts: from its first packet, underruns = stalls > 100 ms).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  buildServer,
  type ChunkTransferAdapter,
  loadConfig,
  locateVoice,
  logger,
  OnnxPiperRunner,
  Orchestrator,
  PiperPhonemizer,
  type StageContext,
  type StageSpec,
  TtsCore,
  ttsSettingsOf,
} from '../../src/index.ts';
import { gitSha } from '../common.ts';
import { tokenizerOf } from '../ttfp/planModes.ts';
import { makePrompts } from '../ttfp/prompts.ts';
import { simulatePlayer, type AudioArrival } from '../ttfp/metrics.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/assistant.yaml' },
    concurrency: { type: 'string', default: '4' },
    'num-prompts': { type: 'string', default: '8' },
    'itl-ms': { type: 'string', default: '60' },
    'ttft-ms': { type: 'string', default: '300' },
    shares: { type: 'string', default: '1,0.67,0.5' },
    margins: { type: 'string', default: '0,2' },
    answers: { type: 'string' },
  },
});
const concurrency = Number(values.concurrency);
const [itlMs, ttftMs] = [Number(values['itl-ms']), Number(values['ttft-ms'])];
const graph = await loadConfig(join(process.cwd(), values.config));
const ttsSpec = graph.stages.find((s) => s.kind === 'tts');
if (!ttsSpec || ttsSpec.model.source !== 'file') throw new Error('the config has no tts stage');
const tokenizer = tokenizerOf(graph);

/** The pipeline's answers to the bench's prompts (seed 0, 100 tokens in and out), text only. */
async function answers(): Promise<number[][]> {
  const prompts = makePrompts({ tokenizer, count: Number(values['num-prompts']), inputLen: 100, seed: 0 });
  const engine = await Orchestrator.start(graph);
  const app = buildServer(engine, { apiKey: null });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const out: number[][] = [];
  for (const [i, prompt] of prompts.entries()) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 100,
        ignore_eos: true,
        seed: i,
      }),
    });
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    out.push(tokenizer.encode(body.choices[0].message.content));
  }
  await app.close();
  await engine.close();
  return out;
}

/** --answers FILE: the answers' token ids kept there (made on the first run, read on the next). */
async function cachedAnswers(): Promise<number[][]> {
  const file = values.answers;
  if (file && existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as number[][];
  const made = await answers();
  if (file) writeFileSync(file, JSON.stringify(made));
  return made;
}

const texts = await cachedAnswers();
const runner = OnnxPiperRunner.load(locateVoice({ path: ttsSpec.model.path }), { threads: 1 }, ttsSettingsOf(ttsSpec));
const phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
await phonemizer.ready();

/** The virtual clock (ms) and the real clocks it stands in for, while a replay runs. */
let vnow = 0;
const EPOCH = Date.now();
const [realDateNow, realPerfNow] = [Date.now, performance.now.bind(performance)];
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Outcome {
  readonly underruns: number;
  readonly worstStallMs: number;
  readonly totalStallMs: number;
  /** Mean, from each answer's start. */
  readonly firstAudioMs: number;
  readonly phrases: number;
  readonly earlyCuts: number;
}

/** A TtsCore with the real voice whose sends land in `audio` (per answer, on the virtual clock) and `finals`. */
function coreFor(margin: number, audio: AudioArrival[][], finals: Set<string>): TtsCore {
  const sink = {
    expect() {},
    stopReceiving() {},
    cancel() {},
    saveAsync(id: string, _t: unknown, chunk: { final: boolean; body?: { pcm?: Float32Array } }) {
      const i = Number(id.slice(1));
      if (chunk.body?.pcm?.length) audio[i].push({ atMs: vnow, durationMs: (chunk.body.pcm.length / 24000) * 1000 });
      if (chunk.final) finals.add(id);
      return Promise.resolve();
    },
  };
  const ctx = {
    spec: { stageId: 'tts', engine: { maxNumSeqs: ttsSpec!.engine.maxNumSeqs } } as unknown as StageSpec,
    chunkPolicy: { chunkTimeoutMs: 600_000 },
    asyncChunk: true,
    scheduling: 'playback',
    adapter: sink as unknown as ChunkTransferAdapter,
    post: () => {},
    log: logger.child({ bench: 'tts-lead' }),
    wake: () => {},
  } as unknown as StageContext;
  const { phrases } = ttsSettingsOf(ttsSpec!);
  return new TtsCore(ctx, { runner, phonemizer, tokenizer, phrases, leadMargin: margin });
}

/**
 * Runs `work` and then the promise continuations it left (phonemes), advancing the clock by their CPU time over
 * `share` (the clock moves during the work too: the core measures its runs by it).
 */
async function charge(share: number, work: () => boolean): Promise<boolean> {
  const c0 = cpuMs();
  const v0 = vnow;
  const clock = () => v0 + (cpuMs() - c0) / share;
  Date.now = () => EPOCH + Math.round(clock());
  performance.now = clock;
  const did = work();
  await new Promise<void>((resolve) => setImmediate(resolve));
  vnow = clock();
  Date.now = () => EPOCH + Math.round(vnow);
  performance.now = () => vnow;
  return did;
}

/** Answer i's request, added now (its first packet due in 1 s, the default first-packet slack). */
function addAnswer(core: TtsCore, i: number): void {
  const playback = { firstPacketDeadlineMs: EPOCH + vnow + 1000, ttfpTargetMs: null, frameMs: 20, downstreamMs: 0 };
  core.add({
    type: 'add',
    requestId: `r${i}`,
    sampling: { maxTokens: 100 } as never,
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [{ instance: 'thinker#0', stageId: 'thinker' }],
    firstChunkDeadline: EPOCH + vnow + 600_000,
    args: { playback },
  });
}

/** Token k of answer i as the Thinker's chunk. */
function tokenChunk(i: number, k: number): { requestId: string; chunk: unknown } {
  const final = k === texts[i].length - 1;
  const requestId = `r${i}`;
  const meta = { requestId, from: 'thinker', to: 'tts', seq: k, final, sentAtMs: Date.now() };
  const body = { kind: 'text', tokenIds: [texts[i][k]] };
  return { requestId, chunk: { meta: final ? { ...meta, finishReason: 'length' } : meta, body } };
}

/** One replay of every answer at `share` of a core with the lead rule's `margin`. */
async function replay(share: number, margin: number): Promise<Outcome> {
  vnow = 0;
  Date.now = () => EPOCH + Math.round(vnow);
  performance.now = () => vnow;
  const audio = texts.map((): AudioArrival[] => []);
  const finals = new Set<string>();
  const core = coreFor(margin, audio, finals);
  const startedAt: number[] = [];
  const live = new Map<number, number>(); // answer -> tokens delivered
  const start = (i: number) => (addAnswer(core, i), (startedAt[i] = vnow), live.set(i, 0));
  while (startedAt.length < Math.min(concurrency, texts.length)) start(startedAt.length);
  while (finals.size < texts.length) {
    let due = Infinity;
    for (const [i, k] of live) {
      if (k >= texts[i].length) continue;
      const at = startedAt[i] + ttftMs + k * itlMs;
      if (at <= vnow) {
        await charge(share, () => (core.onArrivals([tokenChunk(i, k)] as never), true));
        live.set(i, k + 1);
        due = vnow;
      } else due = Math.min(due, at);
    }
    for (const i of [...live.keys()].filter((i) => finals.has(`r${i}`))) {
      live.delete(i);
      if (startedAt.length < texts.length) start(startedAt.length);
      due = vnow;
    }
    if (!(await charge(share, () => core.step())) && due > vnow) vnow = due === Infinity ? vnow + 1 : due;
  }
  Date.now = realDateNow;
  performance.now = realPerfNow;
  return outcomeOf(audio, startedAt, core);
}

function outcomeOf(audio: AudioArrival[][], startedAt: number[], core: TtsCore): Outcome {
  const tts = (core.stats().kind as { tts: { phrases: number; earlyCuts: number } }).tts;
  const stalls = audio.map((a) => simulatePlayer(a));
  return {
    underruns: stalls.reduce((n, s) => n + s.underruns, 0),
    worstStallMs: Math.max(...stalls.map((s) => s.worstStallMs)),
    totalStallMs: stalls.reduce((n, s) => n + s.totalStallMs, 0),
    firstAudioMs: audio.reduce((n, a, i) => n + (a[0]?.atMs ?? NaN) - startedAt[i], 0) / audio.length,
    phrases: tts.phrases,
    earlyCuts: tts.earlyCuts,
  };
}

await replay(1, 0); // warm-up: the voice's first runs are slow
const shares = values.shares.split(',').map(Number);
const margins = values.margins.split(',').map(Number);
const rows: (Outcome & { share: number; margin: number })[] = [];
for (const share of shares) {
  // A B B A over the margins: drift in the machine falls on each alike.
  for (const margin of [...margins, ...[...margins].reverse()])
    rows.push({ share, margin, ...(await replay(share, margin)) });
}
process.stdout.write(
  `${JSON.stringify(
    {
      machine: { cpu: cpus()[0]?.model, cores: cpus().length, load: loadavg()[0], git: gitSha() },
      config: values.config,
      concurrency,
      answers: texts.length,
      itlMs,
      ttftMs,
      rows,
    },
    null,
    2,
  )}\n`,
);
await runner.close();
