/**
 * Bring your own model, as a user would: a decoder ONNX file written here directly with onnx-proto (not with
 * Chorus's model builder), a hand-written tokenizer.json (WordLevel) and a tokenizer_config.json whose Jinja
 * chat_template shapes the prompt, served through a YAML config and asked through the openai SDK. Logits are wider
 * than the tokenizer's vocabulary (as padded exports are) and the padding is where the model would go: it must
 * never be sampled. Words outside the vocabulary map to the unk token, or, without one, get a 400 that says so.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import onnxProto from 'onnx-proto';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tempDir.ts';
import { servePipeline } from '../helpers/servePipeline.ts';

const { onnx } = onnxProto;
const WORDS = ['<unk>', '<eos>', '<|user|>', '<|assistant|>', 'hello', 'sea', 'ship', 'blue'];
const VOCAB = WORDS.length; // 8 tokens the tokenizer knows
const LOGITS = VOCAB + 4; // the model's output is 4 wider (padding rows)
const D = 4; // hidden size = one head of 4

/** A KV-cache decoder in the Optimum layout: input_ids + attention_mask + past -> logits + present. */
function decoderOnnx(): Uint8Array {
  const F = onnx.TensorProto.DataType.FLOAT;
  const I64 = onnx.TensorProto.DataType.INT64;
  const dim = (d: number | string) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d });
  const info = (name: string, type: number, dims: (number | string)[]) => ({
    name,
    type: { tensorType: { elemType: type, shape: { dim: dims.map(dim) } } },
  });
  const floats = (name: string, dims: number[], at: (i: number) => number) => {
    const data = Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, (_, i) => at(i));
    return { name, dims, dataType: F, rawData: new Uint8Array(data.buffer) };
  };
  // Embeddings vary by token; the head scores real words by the embedding and padded ids far higher, so an
  // unmasked sampler would always pick padding.
  const embed = floats('embed', [LOGITS, D], (i) => 0.5 + 0.4 * Math.sin(i * 1.7)); // positive: padding wins
  const head = floats('head', [D, LOGITS], (i) => {
    const id = i % LOGITS;
    return id >= VOCAB ? 50 : id < 4 ? -50 : Math.cos(i * 0.9); // padding first, specials never, words by x
  });
  const axes = { name: 'axes', dims: [1], dataType: I64, rawData: new Uint8Array(BigInt64Array.of(1n).buffer) };
  const node = (op: string, input: string[], output: string[], attribute: object[] = []) => ({
    opType: op,
    input,
    output,
    attribute,
  });
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    producerName: 'a hand-written export',
    graph: {
      name: 'foreign_decoder',
      initializer: [embed, head, axes],
      input: [
        info('input_ids', I64, ['batch_size', 'sequence_length']),
        info('attention_mask', I64, ['batch_size', 'total_length']),
        info('past_key_values.0.key', F, ['batch_size', 1, 'past_length', D]),
        info('past_key_values.0.value', F, ['batch_size', 1, 'past_length', D]),
      ],
      output: [
        info('logits', F, ['batch_size', 'sequence_length', LOGITS]),
        info('present.0.key', F, ['batch_size', 1, 'total_length', D]),
        info('present.0.value', F, ['batch_size', 1, 'total_length', D]),
      ],
      node: [
        node('Gather', ['embed', 'input_ids'], ['x'], [{ name: 'axis', type: 2, i: 0 }]),
        node('MatMul', ['x', 'head'], ['logits']),
        node('Unsqueeze', ['x', 'axes'], ['kv']),
        node('Concat', ['past_key_values.0.key', 'kv'], ['present.0.key'], [{ name: 'axis', type: 2, i: 2 }]),
        node('Concat', ['past_key_values.0.value', 'kv'], ['present.0.value'], [{ name: 'axis', type: 2, i: 2 }]),
      ],
    },
  };
  return onnx.ModelProto.encode(model).finish();
}

function tokenizerFolder(dir: string, withUnk: boolean): void {
  mkdirSync(dir, { recursive: true });
  const special = (content: string, id: number) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [special('<eos>', 1), special('<|user|>', 2), special('<|assistant|>', 3)],
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: null,
    decoder: null,
    model: {
      type: 'WordLevel',
      vocab: Object.fromEntries(WORDS.map((w, i) => [w, i])),
      ...(withUnk ? { unk_token: '<unk>' } : {}),
    },
  };
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      eos_token: '<eos>',
      chat_template:
        '{% for m in messages %}<|{{ m.role }}|> {{ m.content }} {% endfor %}' +
        '{% if add_generation_prompt %}<|assistant|>{% endif %}',
    }),
  );
}

async function serve(withUnk: boolean) {
  const dir = tempDir('foreign');
  writeFileSync(join(dir, 'decoder.onnx'), decoderOnnx());
  tokenizerFolder(join(dir, 'tok'), withUnk);
  writeFileSync(
    join(dir, 'graph.yaml'),
    'stages:\n  - stage_id: thinker\n    kind: thinker\n    model: {path: decoder.onnx, tokenizer: tok}\n' +
      '    final_output: true\n    final_output_type: text\n',
  );
  const { base, close } = await servePipeline(join(dir, 'graph.yaml'));
  const sdk = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });
  const ask = (content: string, extra: object = {}) =>
    sdk.chat.completions.create({
      model: 'chorus-graph',
      messages: [{ role: 'user', content }],
      max_tokens: 6,
      ...({ ignore_eos: true, ...extra } as object),
    });
  return { ask, close };
}

describe('a foreign decoder with a hand-written tokenizer', () => {
  it('answers through its chat template, never samples past the tokenizer, maps unknown words to unk', async () => {
    const { ask, close } = await serve(true);
    try {
      const known = await ask('hello sea');
      // <|user|> hello sea <|assistant|>: the Jinja template shaped the prompt (4 tokens).
      expect(known.usage?.prompt_tokens).toBe(4);
      expect(known.usage?.completion_tokens).toBe(6);
      const answer = known.choices[0].message.content!.trim().split(/\s+/);
      expect(answer).toHaveLength(6);
      for (const word of answer) expect(WORDS).toContain(word); // no padded id: they would not decode
      // Even a bias toward a padded id cannot bring it back.
      const biased = await ask('hello sea', { logit_bias: { [String(VOCAB + 1)]: 100 } });
      for (const word of biased.choices[0].message.content!.trim().split(/\s+/)) expect(WORDS).toContain(word);
      // A word the vocabulary lacks is the unk token, not a server error.
      const unknown = await ask('hello whales and sea');
      expect(unknown.usage?.prompt_tokens).toBe(6);
      expect(unknown.choices[0].finish_reason).toBe('length');
    } finally {
      await close();
    }
  }, 60_000);

  it('without an unk token, an unknown word is a 400 that names it', async () => {
    const { ask, close } = await serve(false);
    try {
      const err = await ask('hello whales').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/no token for "whales"/);
      expect((await ask('hello ship')).choices[0].finish_reason).toBe('length'); // the next request is fine
    } finally {
      await close();
    }
  }, 60_000);
});
