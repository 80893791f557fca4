/**
 * `chorus generate --config FILE --prompt TEXT [--out a.wav] [--seed N] [--max-tokens N] [--ignore-eos] [--json]`
 * Runs one request through the whole pipeline: text streams to stdout as it arrives, audio goes to a 24 kHz mono
 * 16-bit WAV, and --json ends with one JSON line of timings.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig, defaultConfigPath } from '../../config/loadConfig.ts';
import { Orchestrator } from '../../engine/Orchestrator.ts';
import type { OutputModality, OutputEvent } from '../../common/engine.ts';
import { floatToPcm16, wavFromPcm16 } from '../../server/pcm.ts';
import { shutdownOnSignal } from '../shutdownOnSignal.ts';
import { intFlag, UsageError } from '../../common/cliArgs.ts';

export const usage = `usage: chorus generate --prompt TEXT [--config FILE] [--out answer.wav] [--seed N]
                       [--max-tokens N] [--ignore-eos] [--text-only] [--json]

Runs one request through the pipeline of FILE (default configs/tiny-omni.yaml): the text streams to stdout, the
audio goes to --out (a 16-bit WAV); --json prints one JSON line with the text and timings instead.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      config: { type: 'string', default: defaultConfigPath() },
      prompt: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      'max-tokens': { type: 'string' },
      'ignore-eos': { type: 'boolean', default: false },
      'text-only': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (!values.prompt) throw new UsageError('--prompt TEXT is required');
  // Checked before the pipeline's seconds of start-up.
  const seed = intFlag('--seed', values.seed);
  const maxTokens = intFlag('--max-tokens', values['max-tokens'], 1);
  const graph = await loadConfig(values.config!);
  const engine = await Orchestrator.start(graph);
  const unhook = shutdownOnSignal(() => engine.close(2_000));
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
    const pcm: Float32Array[] = [];
    let text = '';
    let sampleRateHz = 24_000;
    let ttft: number | null = null;
    let ttfp: number | null = null;
    const done = await new Promise<Extract<OutputEvent, { type: 'done' }>>((resolve, reject) => {
      handle.events.subscribe({
        next: (e) => {
          if (e.type === 'text') {
            ttft ??= e.atMs - startedAtMs;
            text += e.delta;
            if (!values.json) process.stdout.write(e.delta);
          } else if (e.type === 'audio') {
            ttfp ??= e.atMs - startedAtMs;
            sampleRateHz = e.sampleRateHz;
            pcm.push(e.pcm);
          } else resolve(e);
        },
        error: reject,
      });
    });
    if (!values.json) process.stdout.write('\n');
    if (values.out) await writeFile(values.out, wavFromPcm16(Buffer.concat(pcm.map(floatToPcm16)), sampleRateHz));
    const samples = pcm.reduce((n, p) => n + p.length, 0);
    if (done.finishReason === 'error') process.stderr.write(`chorus: ${done.error?.code}: ${done.error?.message}\n`);
    if (values.json) {
      process.stdout.write(
        JSON.stringify({
          text,
          finish_reason: done.finishReason,
          audio_seconds: samples / sampleRateHz,
          sample_rate: sampleRateHz,
          ttft_ms: ttft,
          ttfp_ms: ttfp,
          e2e_ms: done.atMs - startedAtMs,
          audio_chunks: pcm.length,
        }) + '\n',
      );
    }
    return done.finishReason === 'error' ? 1 : 0;
  } finally {
    unhook();
    await engine.close();
  }
}
