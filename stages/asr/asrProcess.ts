/**
 * The speech-to-text process: loads Whisper (WhisperRunner, converting the CTranslate2 folder on load) and
 * transcribes what the server sends, one clip at a time, oldest first (a run is synchronous: it never shares the
 * server's event loop). The audio is decoded and resampled to 16 kHz here too. argv[2]: AsrProcessArgs as JSON.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { resample } from '../../src/media/resample.ts';
import { decodePcm16, decodeWav } from '../../src/media/wav.ts';
import type { AsrProcessArgs, FromAsr, ToAsr } from './asrMessages.ts';
import { WhisperRunner } from './WhisperRunner.ts';

const send = (m: FromAsr) => process.send?.(m);
const queue: Extract<ToAsr, { type: 'transcribe' }>[] = [];
let runner: WhisperRunner | null = null;
let draining = false;

function run(job: Extract<ToAsr, { type: 'transcribe' }>, whisper: WhisperRunner): void {
  const bytes = new Uint8Array(job.bytes);
  const pcm = job.format === 'wav' ? decodeWav(bytes) : decodePcm16(bytes, job.sampleRateHz);
  const samples = resample(pcm.samples, pcm.sampleRateHz, 16000);
  const started = performance.now();
  const out = whisper.transcribe(samples, (text) => send({ type: 'delta', id: job.id, text }), job.prompt);
  const computeMs = performance.now() - started;
  send({ type: 'done', id: job.id, text: out.text, audioSeconds: samples.length / 16000, computeMs });
}

/** One clip per event-loop turn, so a cancel sent meanwhile is read before the next clip starts. */
function drain(): void {
  const job = queue.shift();
  if (!job || !runner) {
    draining = false;
    return;
  }
  try {
    run(job, runner);
  } catch (err) {
    const code = err instanceof ChorusError ? err.code : ErrorCodes.TRANSCRIPTION_FAILED;
    send({ type: 'failed', id: job.id, code, message: (err as Error).message });
  }
  setImmediate(drain);
}

process.on('message', (m: ToAsr) => {
  if (m.type === 'cancel') {
    const at = queue.findIndex((j) => j.id === m.id);
    if (at >= 0) queue.splice(at, 1);
    return;
  }
  queue.push(m);
  if (!draining && runner) {
    draining = true;
    setImmediate(drain);
  }
});
process.on('disconnect', () => process.exit(0)); // the server went away: nothing to transcribe for

const args = JSON.parse(process.argv[2]) as AsrProcessArgs;
const started = performance.now();
try {
  runner = WhisperRunner.load(args.modelDir, { threads: args.threads });
  send({ type: 'ready', loadMs: performance.now() - started });
  if (queue.length > 0) {
    draining = true;
    setImmediate(drain);
  }
} catch (err) {
  const code = err instanceof ChorusError ? err.code : ErrorCodes.MODEL_LOAD;
  send({ type: 'load_failed', code, message: (err as Error).message });
  process.disconnect?.();
}
