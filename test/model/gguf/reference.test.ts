/**
 * The GGUF -> ONNX conversion against an independent reference: test/model/gguf/reference.py computes SmolLM2's
 * logits in numpy over the `gguf` package's own dequantization, with llama.cpp's RoPE on the file's permuted Q/K rows.
 * The converted decoder, stepped with its KV cache as the Thinker steps it, must give the same last-position logits
 * at every one of GREEDY_STEPS steps (within LOGIT_TOLERANCE) and the same greedy tokens; and the Thinker runner over
 * the imported folder must produce the same greedy text.
 */
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onnxTelemetryOff } from '../../../src/common/onnxTelemetry.ts';
import { GREEDY_SAMPLING } from '../../../src/common/samplingParams.ts';
import { HfTokenizer } from '../../../src/tokenizer/HfTokenizer.ts';
import { createThinkerRunner } from '../../../stages/runners.ts';
import { GGUF_WEIGHT_FORMS, type GgufWeightForm } from '../../../stages/thinker/gguf/ggufDecoder.ts';
import type { ImportedGguf } from '../../../stages/thinker/gguf/importGguf.ts';
import { importedSmolLm2, modelCacheDir, runPython, scratchDir, smolLm2Path } from './smollm2.ts';

const GREEDY_STEPS = 20;
/**
 * Max |logit difference|: float32 ONNX against float64 numpy over the same dequantized weights. Measured ~5e-5 on
 * logits up to ~40 in magnitude; 1e-3 is 20x that and still far below the gap between a greedy pick and its runner-up
 * that a real conversion error (a wrong RoPE pairing, a transposed weight) produces (whole units).
 */
const LOGIT_TOLERANCE = 1e-3;

const QUESTIONS = [
  'What is the capital of France?',
  'Write one sentence about the sea.',
  'Übersetze „Grüße“ ins Englische: 世界.',
];

/**
 * The import (~4 s) and the numpy reference (~10 s: reading the file, then 60 single-threaded decode steps) on an idle
 * 2-core machine; the budget leaves room for a suite (or other work) sharing the cores. Compute, not a wait.
 */
const REFERENCE_BUDGET_MS = 600_000;

interface Reference {
  readonly tokens: number[][];
  readonly vocab: number;
}

/** The imported decoder in each weight form (float32, and Q4_1 kept 4-bit for MatMulNBits). */
const models = new Map<GgufWeightForm, ImportedGguf>();
let model: ImportedGguf;
let prompts: number[][];
/**
 * Started first and awaited only to compare: the script reads and dequantizes the file while the imports run and the
 * prompts are tokenized, and computes while the tests step their own decoders.
 */
let reference: Promise<Reference>;
const scratch = scratchDir();

beforeAll(async () => {
  const job = (async () => {
    for (const form of GGUF_WEIGHT_FORMS) models.set(form, await importedSmolLm2(form));
    model = await importedSmolLm2();
    const tokenizer = HfTokenizer.fromDir(model.dir);
    prompts = QUESTIONS.map((q) => tokenizer.applyChatTemplate([{ role: 'user', content: q }]));
    return { prompts, steps: GREEDY_STEPS, out: `${scratch.dir}/logits.bin` };
  })();
  reference = runPython<Reference>('reference.py', job, [smolLm2Path()]);
  await job;
}, REFERENCE_BUDGET_MS);

afterAll(() => scratch.cleanup());

/** Greedy decode through a bare onnxruntime session, returning each step's logits row. */
async function stepLogits(session: ort.InferenceSession, prompt: number[], numKvHeads: number, headDim: number) {
  const feeds: Record<string, ort.Tensor> = {};
  for (const name of session.inputNames.filter((n) => n.startsWith('past_key_values.')))
    feeds[name] = new ort.Tensor('float32', new Float32Array(0), [1, numKvHeads, 0, headDim]);
  const rows: Float32Array[] = [];
  let ids = prompt;
  let past = 0;
  for (let step = 0; step < GREEDY_STEPS; step++) {
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
    const row = out.logits.data as Float32Array;
    rows.push(row);
    let best = 0;
    for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
    past = total;
    ids = [best];
  }
  return rows;
}

describe('GGUF import of SmolLM2-135M-Instruct (llama, Q4_1 + Q8_0, tied embeddings)', () => {
  it.each(GGUF_WEIGHT_FORMS)(
    'in %s form gives the reference logits at every decode step, and its greedy tokens',
    async (form) => {
      const model = models.get(form)!;
      const { numKvHeads, headDim, vocabSize } = model.manifest.architecture;
      onnxTelemetryOff(); // as every session the product opens (the suite fails on a telemetry log left in TMPDIR)
      const session = await ort.InferenceSession.create(model.decoderPath, { intraOpNumThreads: 1 });
      let rows: Float32Array[][];
      try {
        rows = [];
        for (const prompt of prompts) rows.push(await stepLogits(session, prompt, numKvHeads, headDim));
      } finally {
        await session.release();
      }
      const { tokens, vocab } = await reference;
      expect(vocab).toBe(vocabSize);
      const expected = scratch.read('logits.bin');
      for (const [p, promptRows] of rows.entries()) {
        let worst = 0;
        const greedy: number[] = [];
        promptRows.forEach((row, step) => {
          const want = expected.subarray(
            (p * GREEDY_STEPS + step) * vocabSize,
            (p * GREEDY_STEPS + step + 1) * vocabSize,
          );
          for (let i = 0; i < vocabSize; i++) worst = Math.max(worst, Math.abs(row[i] - want[i]));
          let best = 0;
          for (let i = 1; i < vocabSize; i++) if (row[i] > row[best]) best = i;
          greedy.push(best);
        });
        expect(worst, `prompt ${p}: max |logit - reference|`).toBeLessThan(LOGIT_TOLERANCE);
        expect(greedy).toEqual(tokens[p]);
      }
    },
    REFERENCE_BUDGET_MS,
  );

  it(
    'the Thinker runner over the imported folder decodes the reference greedy text',
    async () => {
      const runner = await createThinkerRunner(
        { model: { source: 'file', path: model.decoderPath, tokenizer: model.dir } },
        modelCacheDir(),
      );
      try {
        expect(runner.eosTokenId).toBe(model.manifest.eosTokenId);
        const tokenizer = HfTokenizer.fromDir(model.dir);
        const decoded = prompts.map((prompt, p) => {
          const seqId = `q${p}`;
          const sampling = GREEDY_SAMPLING;
          const tokens = [
            runner.execute([{ seqId, tokenIds: prompt, numTokens: prompt.length, sample: true, sampling }])[0].tokenId!,
          ];
          while (tokens.length < GREEDY_STEPS)
            tokens.push(
              runner.execute([{ seqId, tokenIds: [tokens.at(-1)!], numTokens: 1, sample: true, sampling }])[0].tokenId!,
            );
          runner.free(seqId);
          return tokens;
        });
        const { tokens } = await reference;
        for (const [p, got] of decoded.entries()) expect(got, tokenizer.decode(got)).toEqual(tokens[p]);
      } finally {
        await runner.close();
      }
    },
    REFERENCE_BUDGET_MS,
  );
});
