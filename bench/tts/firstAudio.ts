/**
 * `node --import tsx bench/tts/firstAudio.ts [--config configs/assistant.yaml] [--rounds 5]` — first audio of a
 * Thinker -> tts pipeline at c=1 against its critical path: the time the answer's first phrase is complete in the
 * text stream (as the client sees the text) plus the time the voice alone takes for that phrase (phonemes,
 * synthesis, resampling: measured in this process after each request, on the same phrase). Streamed chat
 * completions with text and audio; a few questions, each asked `rounds` times.
 *
 * Side by side, in the same run: Piper's own implementation (the piper-tts package, bench/tts/piper_timing.py) on
 * each whole answer, as `piper -f out.wav` synthesizes it (whole utterance), against Chorus's first audio counted from
 * the moment the Thinker's first phrase is complete (phrase streaming). Goal: <= 0.5x for three-sentence answers.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  buildServer,
  loadConfig,
  locateVoice,
  OnnxPiperRunner,
  Orchestrator,
  phonemeIds,
  PhraseSplitter,
  PiperPhonemizer,
  resample,
  ttsSettingsOf,
} from '../../src/index.ts';
import { gitSha } from '../common.ts';

const QUESTIONS = [
  'What is the capital of France?',
  'Name three colors.',
  'Why is the sky blue?',
  'Describe Paris in three sentences.',
];

const { values } = parseArgs({
  options: { config: { type: 'string', default: 'configs/assistant.yaml' }, rounds: { type: 'string', default: '3' } },
});
const graph = await loadConfig(join(process.cwd(), values.config));
const ttsSpec = graph.stages.find((s) => s.kind === 'tts');
if (!ttsSpec || ttsSpec.model.source !== 'file') throw new Error('the config has no tts stage');
const ttsSettings = ttsSettingsOf(ttsSpec);
const engine = await Orchestrator.start(graph);
const app = buildServer(engine, { apiKey: null });
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as { port: number };
const voiceFile = locateVoice({ path: ttsSpec.model.path });
const voice = OnnxPiperRunner.load(voiceFile, { threads: 1 }, ttsSettings);
const phonemizer = new PiperPhonemizer(voice.voice.espeakVoice);
await phonemizer.ready();

interface Round {
  readonly firstAudioMs: number;
  readonly firstPhraseTextMs: number;
  readonly phraseSynthMs: number;
  readonly phrase: string;
  readonly answer: string;
}

async function ask(question: string): Promise<Round> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: question }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      max_tokens: 128,
    }),
  });
  const splitter = new PhraseSplitter(ttsSettings.phrases);
  let firstAudioMs = NaN;
  let firstPhraseTextMs = NaN;
  let phrase = '';
  let answer = '';
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const bytes of res.body!) {
    buffered += decoder.decode(bytes, { stream: true });
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines.filter((l) => l.startsWith('data: {'))) {
      const delta = (JSON.parse(line.slice(6)) as { choices: { delta: Record<string, unknown> }[] }).choices[0]?.delta;
      const audio = delta?.audio as { data?: string; transcript?: string } | undefined;
      if (audio?.data && Number.isNaN(firstAudioMs)) firstAudioMs = performance.now() - started;
      const text = (delta?.content as string | undefined) ?? audio?.transcript ?? '';
      answer += text;
      if (text && !phrase) {
        const done = splitter.push(text);
        if (done.length > 0) [phrase, firstPhraseTextMs] = [done[0], performance.now() - started];
      }
    }
  }
  if (!phrase) [phrase, firstPhraseTextMs] = [splitter.end()[0] ?? '', performance.now() - started];
  const t = performance.now();
  for (const s of await phonemizer.sentences(phrase)) {
    const [pcm] = voice.synthesize([{ seqId: 'p', ids: phonemeIds(s, voice.voice.phonemeIdMap).ids }]);
    resample(pcm, voice.sampleRateHz, 24000);
  }
  return { firstAudioMs, firstPhraseTextMs, phraseSynthMs: performance.now() - t, phrase, answer };
}

const rounds: Round[] = [];
await ask(QUESTIONS[0]); // warm-up
for (let r = 0; r < Number(values.rounds); r++) for (const q of QUESTIONS) rounds.push(await ask(q));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratios = rounds.map((r) => r.firstAudioMs / (r.firstPhraseTextMs + r.phraseSynthMs));

/** Piper's own timings for each answer (whole utterance, and its sentence iterator's first chunk). */
const piper = (
  JSON.parse(
    execFileSync('python3', [join(import.meta.dirname, 'piper_timing.py'), voiceFile], {
      input: JSON.stringify(rounds.map((r) => r.answer)),
      encoding: 'utf8',
    }),
  ) as { rows: { whole_ms: number; first_chunk_ms: number }[] }
).rows;
const sentences = (text: string) => text.split(/[.!?]+(?:\s|$)/).filter((x) => x.trim()).length;
const threeSentence = rounds.flatMap((r, i) =>
  sentences(r.answer) >= 3 ? [{ chorus: r.firstAudioMs - r.firstPhraseTextMs, piper: piper[i] }] : [],
);
process.stdout.write(
  `${JSON.stringify(
    {
      machine: { cpu: cpus()[0]?.model, cores: cpus().length, load: loadavg()[0], git: gitSha() },
      config: values.config,
      requests: rounds.length,
      firstAudioMs: mean(rounds.map((r) => r.firstAudioMs)),
      firstPhraseTextMs: mean(rounds.map((r) => r.firstPhraseTextMs)),
      phraseSynthMs: mean(rounds.map((r) => r.phraseSynthMs)),
      /** First audio over its critical path (the goal: <= 1.2). */
      ratioMean: mean(ratios),
      ratioP50: median(ratios),
      firstPhrases: [...new Set(rounds.map((r) => r.phrase))],
      sideBySide: {
        /** Answers of three sentences or more. */
        answers: threeSentence.length,
        /** Chorus: first audio after the Thinker's first complete phrase. */
        chorusFromPhraseMs: mean(threeSentence.map((x) => x.chorus)),
        /** piper-tts: the whole answer synthesized (whole utterance, as `piper -f out.wav`). */
        piperWholeMs: mean(threeSentence.map((x) => x.piper.whole_ms)),
        /** piper-tts: the first chunk of its own sentence iterator. */
        piperFirstSentenceMs: mean(threeSentence.map((x) => x.piper.first_chunk_ms)),
        /** The goal: <= 0.5. */
        ratioP50: median(threeSentence.map((x) => x.chorus / x.piper.whole_ms)),
        ratioMean: mean(threeSentence.map((x) => x.chorus / x.piper.whole_ms)),
      },
    },
    null,
    2,
  )}\n`,
);
await voice.close();
await app.close();
await engine.close();
