/**
 * `node --import tsx bench/grammar/stepCost.ts [--preset tiny|omni] [--rounds N] [--steps N]` — what a grammar costs
 * a decode step: the Thinker's batched step at batch 8 with no request constrained (A), all 8 (B), and 4 of 8 (C,
 * unconstrained requests sharing the batch with constrained ones), rounds alternated A B C C B A so drift falls on
 * all; then a schema's first and second compile, and the mask cost per constrained item on a 49k vocabulary.
 *
 * A step is what ThinkerCore does per step: each constrained item's mask (RequestGrammar.mask) before the batch, the
 * batched forward and sampling with the mask (OnnxThinkerRunner.execute), the matcher advanced over each sample.
 * Sampling is at temperature 1, so the constrained answers run through the schema (a finished one starts over).
 * Machine, load and git SHA are printed.
 */
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ByteTokenizer,
  byteTokenizerVocab,
  createThinkerRunner,
  GrammarEngine,
  jsonSchemaSpec,
  Prng,
  type RequestGrammar,
  sampleToken,
  type SamplingParams,
  type ThinkerBatchItem,
} from '../../src/index.ts';
import { GREEDY_SAMPLING } from '../../src/basics.ts';
import { gitSha } from '../common.ts';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'omni' },
    rounds: { type: 'string', default: '3' },
    steps: { type: 'string', default: '60' },
  },
});
const rounds = Number(values.rounds);
const steps = Number(values.steps);
const BATCH = 8;

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 24 },
    role: { enum: ['admin', 'user', 'guest'] },
    address: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 16 }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city', 'zip'],
    },
    tags: { type: 'array', items: { type: 'string', maxLength: 12 }, maxItems: 6 },
  },
  required: ['name', 'role', 'address', 'tags'],
};

const sampling: SamplingParams = { ...GREEDY_SAMPLING, temperature: 1, seed: 1, maxTokens: 100_000 };

const model = { source: 'generated', kind: 'thinker', preset: values.preset, seed: 0 } as const;
const { presets } = await import('../../src/index.ts');
const size = (presets as Record<string, { thinker: { vocabSize: number } }>)[values.preset!].thinker;
const spec = { model: { ...model, size }, engine: { threads: 1 } } as unknown as Parameters<
  typeof createThinkerRunner
>[0];
const runner = await createThinkerRunner(spec, join(tmpdir(), 'chorus-bench-models'));
const tokenizer = new ByteTokenizer(runner.vocabSize);
const engine = await GrammarEngine.create(byteTokenizerVocab(tokenizer), runner.vocabSize);
const grammarSpec = jsonSchemaSpec(SCHEMA, 'schema');
const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'Give me a user record as JSON, please.' }]);

/** One round: 8 fresh sequences prefilled, then `steps` decode steps; the mean decode step in ms. */
async function round(constrained: number, seq: number): Promise<number> {
  const ids = Array.from({ length: BATCH }, (_, b) => `r${seq}-${b}`);
  const grammars: (RequestGrammar | null)[] = [];
  for (let b = 0; b < BATCH; b++) grammars.push(b < constrained ? await engine.open(grammarSpec) : null);
  const item = (b: number, tokenIds: number[]): ThinkerBatchItem => {
    const g = grammars[b];
    const allowedTokens = g ? g.mask() : undefined;
    return {
      seqId: ids[b],
      tokenIds,
      numTokens: tokenIds.length,
      sample: true,
      sampling,
      ...(allowedTokens ? { allowedTokens } : {}),
    };
  };
  // A finished (or, after a start over, refused) answer starts over: cached, so no compile; untimed.
  const advance = async (tokens: number[]): Promise<void> => {
    for (let b = 0; b < BATCH; b++) {
      const g = grammars[b];
      if (!g || (g.accept(tokens[b]) && !g.terminated)) continue;
      g.dispose();
      grammars[b] = await engine.open(grammarSpec);
    }
  };
  let last = runner.execute(ids.map((_, b) => item(b, prompt))).map((o) => o.tokenId!);
  await advance(last);
  let total = 0;
  for (let s = 0; s < steps; s++) {
    const started = performance.now();
    last = runner.execute(ids.map((_, b) => item(b, [last[b]]))).map((o) => o.tokenId!);
    const finished = grammars.map((g, b) => (g ? !g.accept(last[b]) || g.terminated : false));
    total += performance.now() - started;
    for (let b = 0; b < BATCH; b++) {
      if (!finished[b]) continue;
      grammars[b]!.dispose();
      grammars[b] = await engine.open(grammarSpec);
    }
  }
  for (const g of grammars) g?.dispose();
  for (const id of ids) runner.free(id);
  return total / steps;
}

/** Mean of a list. */
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const modes = { A: 0, B: BATCH, C: BATCH / 2 } as const;
const times: Record<keyof typeof modes, number[]> = { A: [], B: [], C: [] };
let seq = 0;
await round(BATCH, seq++); // warm-up (and the schema's compile)
for (let r = 0; r < rounds; r++)
  for (const m of (r % 2 === 0 ? ['A', 'B', 'C'] : ['C', 'B', 'A']) as (keyof typeof modes)[])
    times[m].push(await round(modes[m], seq++));

// A schema's first compile and its second request (taken from the cache).
const fresh = jsonSchemaSpec({ ...SCHEMA, title: `fresh-${Date.now()}` }, 'schema');
let t = performance.now();
(await engine.open(fresh)).dispose();
const firstMs = performance.now() - t;
t = performance.now();
(await engine.open(fresh)).dispose();
const secondMs = performance.now() - t;

// The mask's cost per constrained item on a 49k vocabulary (SmolLM2's size): fill + apply, no model.
const big = new ByteTokenizer(49152);
const bigEngine = await GrammarEngine.create(byteTokenizerVocab(big), 49152);
const g = await bigEngine.open(grammarSpec);
const rng = new Prng(3);
const logits = new Float32Array(49152).map(() => rng.nextFloat());
const n = 400;
t = performance.now();
for (let i = 0; i < n; i++) {
  const id = sampleToken(logits, sampling, rng, { allowed: g.mask() });
  if (!g.accept(id) || g.terminated) break;
}
const maskMs49k = (performance.now() - t) / n;
let unmaskedMs = performance.now();
for (let i = 0; i < n; i++) sampleToken(logits, sampling, rng);
unmaskedMs = (performance.now() - unmaskedMs) / n;

const a = mean(times.A);
console.log(
  JSON.stringify(
    {
      machine: { cpus: cpus().length, model: cpus()[0]?.model, load1: loadavg()[0] },
      git: gitSha(),
      preset: values.preset,
      vocab: runner.vocabSize,
      batch: BATCH,
      rounds,
      steps,
      stepMs: { unconstrained: a, allConstrained: mean(times.B), halfConstrained: mean(times.C) },
      ratio: { allConstrained: mean(times.B) / a, halfConstrained: mean(times.C) / a },
      compileMs: { first: firstMs, second: secondMs, engineStats: engine.stats },
      vocab49k: { sampleWithMaskMs: maskMs49k, sampleWithoutMaskMs: unmaskedMs },
    },
    null,
    2,
  ),
);
await runner.close();
