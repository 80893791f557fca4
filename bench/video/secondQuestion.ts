/**
 * Issue 44's goal "a second question about the same clip: TTFT <= 0.3x the first", through the HTTP front end of a
 * real pipeline (the config's encoders and Thinker as processes): per round, a fresh clip (its own colours, so no
 * cache holds it) is asked about once, then asked a second, different question. TTFT is the client's: from sending
 * the body (the clip as a data: URL) to the first streamed content, so the decode in main, the encode and the
 * prefill all count. Rounds run one after another on an idle server; the figure is the ratio of the medians.
 *
 *   npx tsx bench/video/secondQuestion.ts [--config configs/tiny-omni.yaml] [--rounds 5] [--seconds 15]
 */
import { benchLogger } from '../benchLogger.ts';
import { gitSha, median } from '../common.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { streamedTtft } from '../streamChat.ts';
import { readBenchConfig, startInProcessServer } from '../ttfp/inProcessServer.ts';
import { benchClip, videoQuestion } from './benchClip.ts';

async function main(): Promise<void> {
  const flags = pipelineFlags({ rounds: 5, seconds: 15 });
  const log = benchLogger(process.stderr);
  const config = await readBenchConfig(flags.config);
  const server = await startInProcessServer(config.graph, log);
  const rounds: { first: number; second: number; cached: number }[] = [];
  try {
    const ask = (clip: Buffer, text: string) => streamedTtft(server.baseUrl, videoQuestion(clip, text));
    const warm = await benchClip(2, 300);
    await ask(warm, 'warm up'); // first spawns and first runs out of the figure
    for (let r = 0; r < flags.rounds; r++) {
      const clip = await benchClip(flags.seconds, 20 + 40 * r);
      const first = await ask(clip, 'What happens in this clip?');
      const second = await ask(clip, 'Which colour is the ball?');
      rounds.push({ first: first.ttftMs, second: second.ttftMs, cached: second.cachedTokens });
      console.error(`round ${r}: first ${first.ttftMs.toFixed(0)} ms, second ${second.ttftMs.toFixed(0)} ms`);
    }
  } finally {
    await server.close();
  }
  const first = median(rounds.map((r) => r.first));
  const second = median(rounds.map((r) => r.second));
  const result = {
    gitSha: gitSha(),
    config: flags.config,
    clipSeconds: flags.seconds,
    rounds,
    firstTtftP50Ms: Math.round(first),
    secondTtftP50Ms: Math.round(second),
    ratio: Number((second / first).toFixed(3)),
    goal: 'second <= 0.3x first',
  };
  console.log(JSON.stringify(result, null, 2));
}

await main();
