/**
 * Issue 44's goal "a second question about the same clip: TTFT <= 0.3x the first", through the HTTP front end of a
 * real pipeline (the config's encoders and Thinker as processes): per round, a fresh clip (its own colours, so no
 * cache holds it) is asked about once, then asked a second, different question. TTFT is the client's: from sending
 * the body (the clip as a data: URL) to the first streamed content, so the decode in main, the encode and the
 * prefill all count. Rounds run one after another on an idle server; the figure is the ratio of the medians.
 *
 *   npx tsx bench/video/secondQuestion.ts [--config configs/tiny-omni.yaml] [--rounds 5] [--seconds 15]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import { benchLogger } from '../benchLogger.ts';
import { gitSha } from '../common.ts';
import { readBenchConfig, startInProcessServer } from '../ttfp/inProcessServer.ts';

const run = promisify(execFile);

/** A test-pattern clip (H.264, 320 x 240, 10 fps) whose hue is `hue` degrees: a different clip per round. */
export async function benchClip(seconds: number, hue: number): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'chorus-benchclip-'));
  try {
    const out = join(dir, 'clip.mp4');
    const src = `testsrc2=size=320x240:rate=10:duration=${seconds}`;
    const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', src];
    args.push('-vf', `hue=h=${hue}`, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', out);
    await run(ffmpegInstaller.path, args); // the decoder Chorus runs, the same static build
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Client TTFT (ms) of a streamed chat completion: body sent -> first content delta; throws on an error status. */
export async function streamedTtft(baseUrl: string, body: unknown): Promise<{ ttftMs: number; cached: number }> {
  const start = performance.now();
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...(body as object), stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttftMs = NaN;
  let cached = 0;
  let text = '';
  for await (const piece of res.body.pipeThrough(new TextDecoderStream())) {
    text += piece;
    if (Number.isNaN(ttftMs) && text.includes('"content":"')) ttftMs = performance.now() - start;
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const usage = (JSON.parse(line.slice(6)) as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } })
      .usage;
    cached = usage?.prompt_tokens_details?.cached_tokens ?? cached;
  }
  return { ttftMs, cached };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: 'string', default: 'configs/tiny-omni.yaml' },
      rounds: { type: 'string', default: '5' },
      seconds: { type: 'string', default: '15' },
    },
  });
  const log = benchLogger(process.stderr);
  const config = await readBenchConfig(values.config);
  const server = await startInProcessServer(config.graph, log);
  const rounds: { first: number; second: number; cached: number }[] = [];
  try {
    const ask = (clip: Buffer, text: string) => ({
      max_tokens: 2,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'video_url', video_url: { url: `data:video/mp4;base64,${clip.toString('base64')}` } },
            { type: 'text', text },
          ],
        },
      ],
    });
    const warm = await benchClip(2, 300);
    await streamedTtft(server.baseUrl, ask(warm, 'warm up')); // first spawns and first runs out of the figure
    for (let r = 0; r < Number(values.rounds); r++) {
      const clip = await benchClip(Number(values.seconds), 20 + 40 * r);
      const first = await streamedTtft(server.baseUrl, ask(clip, 'What happens in this clip?'));
      const second = await streamedTtft(server.baseUrl, ask(clip, 'Which colour is the ball?'));
      rounds.push({ first: first.ttftMs, second: second.ttftMs, cached: second.cached });
      console.error(`round ${r}: first ${first.ttftMs.toFixed(0)} ms, second ${second.ttftMs.toFixed(0)} ms`);
    }
  } finally {
    await server.close();
  }
  const first = median(rounds.map((r) => r.first));
  const second = median(rounds.map((r) => r.second));
  const result = {
    gitSha: gitSha(),
    config: values.config,
    clipSeconds: Number(values.seconds),
    rounds,
    firstTtftP50Ms: Math.round(first),
    secondTtftP50Ms: Math.round(second),
    ratio: Number((second / first).toFixed(3)),
    goal: 'second <= 0.3x first',
  };
  console.log(JSON.stringify(result, null, 2));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
