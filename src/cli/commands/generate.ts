/**
 * `chorus generate --config FILE --prompt TEXT [--out a.wav] [--seed N] [--max-tokens N] [--ignore-eos] [--json]`
 * Runs one request through the whole pipeline: text streams to stdout as it arrives, audio goes to a 24 kHz mono
 * 16-bit WAV, and --json ends with one JSON line of timings.
 */
import { writeFile } from 'node:fs/promises';
import { commandFlags } from '../commandFlags.ts';
import type { OutputModality, OutputEvent, RequestHandle } from '../../common/engine.ts';
import { shutdownOnSignal } from '../shutdownOnSignal.ts';
import { intFlag, UsageError } from '../../common/cliArgs.ts';

export const usage = `usage: chorus generate --prompt TEXT [--config FILE] [--out answer.wav] [--seed N]
                       [--max-tokens N] [--ignore-eos] [--text-only] [--json]

Runs one request through the pipeline of FILE (default configs/tiny-omni.yaml): the text streams to stdout, the
audio goes to --out (a 16-bit WAV); --json prints one JSON line with the text and timings instead.
`;

/** What one request answered, as it arrived: the text, the audio chunks, and when each began. */
interface Answer {
  text: string;
  pcm: Float32Array[];
  sampleRateHz: number;
  ttftMs: number | null;
  ttfpMs: number | null;
  done: Extract<OutputEvent, { type: 'done' }>;
}

/** Reads the answer's events until `done`; the text goes to stdout as it arrives when `echo`. */
async function collectAnswer(handle: RequestHandle, startedAtMs: number, echo: boolean): Promise<Answer> {
  const answer: Omit<Answer, 'done'> = { text: '', pcm: [], sampleRateHz: 24_000, ttftMs: null, ttfpMs: null };
  const done = await new Promise<Answer['done']>((resolve, reject) => {
    handle.events.subscribe({
      next: (e) => {
        if (e.type === 'text') {
          answer.ttftMs ??= e.atMs - startedAtMs;
          answer.text += e.delta;
          if (echo) process.stdout.write(e.delta);
        } else if (e.type === 'audio') {
          answer.ttfpMs ??= e.atMs - startedAtMs;
          answer.sampleRateHz = e.sampleRateHz;
          answer.pcm.push(e.pcm);
        } else resolve(e);
      },
      error: reject,
    });
  });
  if (echo) process.stdout.write('\n');
  return { ...answer, done };
}

/** --json's one line: the text and the timings. */
function jsonLine(answer: Answer, startedAtMs: number): string {
  const { text, pcm, sampleRateHz, done } = answer;
  const samples = pcm.reduce((n, p) => n + p.length, 0);
  return (
    JSON.stringify({
      text,
      finish_reason: done.finishReason,
      audio_seconds: samples / sampleRateHz,
      sample_rate: sampleRateHz,
      ttft_ms: answer.ttftMs,
      ttfp_ms: answer.ttfpMs,
      e2e_ms: done.atMs - startedAtMs,
      audio_chunks: pcm.length,
    }) + '\n'
  );
}

export async function run(argv: string[]): Promise<number> {
  const values = commandFlags(argv, {
    prompt: { type: 'string' },
    out: { type: 'string' },
    seed: { type: 'string' },
    'max-tokens': { type: 'string' },
    'ignore-eos': { type: 'boolean', default: false },
    'text-only': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  if (!values.prompt) throw new UsageError('--prompt TEXT is required');
  // Checked before the pipeline's seconds of start-up.
  const seed = intFlag('--seed', values.seed);
  const maxTokens = intFlag('--max-tokens', values['max-tokens'], 1);
  // Loaded once the flags are checked: --help and a bad flag answer without the seconds the pipeline's modules take.
  const [{ loadConfig }, { Orchestrator }, { floatToPcm16, wavFromPcm16 }] = await Promise.all([
    import('../../config/loadConfig.ts'),
    import('../../engine/Orchestrator.ts'),
    import('../../server/pcm.ts'),
  ]);
  const graph = await loadConfig(values.config);
  const engine = await Orchestrator.start(graph);
  // No drain: the one answer in flight is that of whoever sent the signal (Ctrl-C), who asked for it to stop. A drain
  // kept it printing for its 2 s and then cut it all the same, unless it happened to end within them.
  const unhook = shutdownOnSignal(() => engine.close(0));
  try {
    const modalities: OutputModality[] = values['text-only'] ? ['text'] : ['text', 'audio'];
    const startedAtMs = Date.now();
    const handle = engine.generate({
      messages: [{ role: 'user', content: values.prompt }],
      modalities,
      sampling: {
        ...(seed !== undefined ? { seed } : {}),
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        ignoreEos: values['ignore-eos'],
      },
      talkerSampling: { ...(seed !== undefined ? { seed } : {}), ignoreEos: values['ignore-eos'] },
    });
    const answer = await collectAnswer(handle, startedAtMs, !values.json);
    const { pcm, sampleRateHz, done } = answer;
    if (values.out) await writeFile(values.out, wavFromPcm16(Buffer.concat(pcm.map(floatToPcm16)), sampleRateHz));
    if (done.finishReason === 'error') process.stderr.write(`chorus: ${done.error?.code}: ${done.error?.message}\n`);
    if (values.json) process.stdout.write(jsonLine(answer, startedAtMs));
    return done.finishReason === 'error' ? 1 : 0;
  } finally {
    unhook();
    await engine.close();
  }
}
