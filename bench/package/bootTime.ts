/**
 * Compiled JavaScript against the TypeScript sources through tsx (issue 42 item 5): how long `chorus serve` takes from
 * its spawn to serving (main's boot and every stage's boot to READY: the stages boot side by side), and its first
 * request's latency, the two ways alternating round by round so that the machine's drift falls on both.
 *
 *   npm run build && node --import tsx bench/package/bootTime.ts [--config configs/tiny-omni.yaml] [--rounds 6]
 *
 * The models come from the user cache (built once before the first round), so a boot times code, not a model build.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { gitSha, median } from '../common.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { ServerProcess } from '../soak/ServerProcess.ts';

const ROOT = join(import.meta.dirname, '..', '..');

interface Boot {
  readonly serveMs: number;
  readonly firstRequestMs: number;
}

/** One `chorus serve`: spawn -> its "serving" line -> one short chat completion -> SIGTERM and its exit. */
async function bootOnce(config: string, compiled: boolean): Promise<Boot> {
  const started = performance.now();
  const env = { ...process.env, CHORUS_LOG_LEVEL: 'warn', CHORUS_COMPILED: compiled ? '1' : '0' };
  const server = await ServerProcess.start(config, [], env);
  try {
    const serveMs = performance.now() - started;
    const t0 = performance.now();
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 4 }),
    });
    await res.json();
    if (!res.ok) throw new Error(`first request: HTTP ${res.status}`);
    return { serveMs, firstRequestMs: performance.now() - t0 };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const values = pipelineFlags({ rounds: 6 });
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('no dist/: run `npm run build` first');
  const { rounds } = values;
  await bootOnce(values.config, true); // builds the models into the cache if they are not there yet
  const runs = { compiled: [] as Boot[], tsx: [] as Boot[] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first: a round's second boot finds the page cache warmer.
    for (const compiled of r % 2 === 0 ? [true, false] : [false, true]) {
      const boot = await bootOnce(values.config, compiled);
      (compiled ? runs.compiled : runs.tsx).push(boot);
      process.stderr.write(
        `round ${r + 1}/${rounds} ${compiled ? 'compiled' : 'tsx'}: ${boot.serveMs.toFixed(0)} ms\n`,
      );
    }
  }
  const row = (what: keyof Boot) => {
    const c = median(runs.compiled.map((b) => b[what]));
    const t = median(runs.tsx.map((b) => b[what]));
    return `| ${what} | ${c.toFixed(0)} ms | ${t.toFixed(0)} ms | ${(c / t).toFixed(2)}x |`;
  };
  console.log(`git ${gitSha()}, ${rounds} rounds, medians, config ${values.config}`);
  console.log('| figure | compiled | tsx | compiled / tsx |\n| --- | --- | --- | --- |');
  console.log(row('serveMs'));
  console.log(row('firstRequestMs'));
}

await main();
