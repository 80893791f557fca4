/**
 * `node --import tsx bench/ttfp/pairedTtfp.ts --config A.yaml --other B.yaml [--pairs 30] [--input-len 100]
 * [--output-len 100] [--warmup 2]` — the engine's TTFT and TTFP (generate() to the first text and audio event) of two
 * configs, one request at a time, alternating between them (A then B, then B then A, ...) in one process, both
 * engines up throughout. Load that drifts during the run (other work on a shared machine) falls on both alike, so
 * the per-pair differences compare the configs where two runs one after the other cannot.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { OutputEvent } from '../../src/common/engine.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { createTokenizer } from '../../src/tokenizer/index.ts';
import { percentile } from './metrics.ts';
import { makePrompts } from './prompts.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    other: { type: 'string' },
    pairs: { type: 'string', default: '30' },
    'input-len': { type: 'string', default: '100' },
    'output-len': { type: 'string', default: '100' },
    warmup: { type: 'string', default: '2' },
  },
});
if (!values.config || !values.other) throw new Error('give --config A.yaml and --other B.yaml');
const [pairs, inputLen, outputLen, warmup] = [
  values.pairs,
  values['input-len'],
  values['output-len'],
  values.warmup,
].map(Number);
const graphs = await Promise.all([loadConfig(path.resolve(values.config)), loadConfig(path.resolve(values.other))]);
const thinker = graphs[0].stages.find((s) => s.kind === 'thinker')!;
const size = thinker.model.source === 'generated' && thinker.model.kind === 'thinker' ? thinker.model.size : undefined;
const prompts = makePrompts({
  tokenizer: createTokenizer(thinker.model, size),
  count: pairs + warmup,
  inputLen,
  seed: 0,
});
const engines = await Promise.all(graphs.map((g) => Orchestrator.start(g)));

/** TTFT and TTFP of one request, ms. */
function once(engine: Orchestrator, content: string, seed: number): Promise<[number, number]> {
  const start = performance.now();
  let ttft = NaN;
  let ttfp = NaN;
  const handle = engine.generate({
    messages: [{ role: 'user', content }],
    modalities: ['text', 'audio'],
    sampling: { maxTokens: outputLen, ignoreEos: true, seed },
    talkerSampling: { ignoreEos: true, seed },
  });
  return new Promise((resolve, reject) =>
    handle.events.subscribe({
      next: (e: OutputEvent) => {
        if (e.type === 'text' && Number.isNaN(ttft)) ttft = performance.now() - start;
        if (e.type === 'audio' && Number.isNaN(ttfp)) ttfp = performance.now() - start;
        if (e.type === 'done') resolve([ttft, ttfp]);
      },
      error: reject,
    }),
  );
}

try {
  const a: [number, number][] = [];
  const b: [number, number][] = [];
  for (let i = 0; i < warmup + pairs; i++) {
    const first = i % 2 === 0 ? 0 : 1;
    const got: [number, number][] = [];
    for (const k of [first, 1 - first]) got[k] = await once(engines[k], prompts[i], i);
    if (i < warmup) continue;
    a.push(got[0]);
    b.push(got[1]);
  }
  const p50 = (xs: number[]) => percentile(xs, 50);
  const row = (what: string, k: 0 | 1) => {
    const [xa, xb] = [a.map((x) => x[k]), b.map((x) => x[k])];
    const diffs = xa.map((x, i) => x - xb[i]);
    const wins = diffs.filter((d) => d < 0).length;
    return (
      `${what}: p50 ${p50(xa).toFixed(1)} vs ${p50(xb).toFixed(1)} ms (ratio ${(p50(xa) / p50(xb)).toFixed(3)}); ` +
      `per-pair difference p50 ${p50(diffs).toFixed(1)} ms, --config faster in ${wins} of ${diffs.length} pairs`
    );
  };
  process.stdout.write(
    `--config ${values.config} vs --other ${values.other}, ${pairs} pairs, ${inputLen} in / ${outputLen} out\n` +
      `${row('TTFT', 0)}\n${row('TTFP', 1)}\n`,
  );
} finally {
  await Promise.all(engines.map((e) => e.close()));
}
