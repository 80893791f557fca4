/**
 * A stage may point at an ONNX file instead of a generated model. Optimum-layout decoders of any size
 * load through session metadata; files that do not follow the signature are refused with an error that
 * names what is missing. A vocoder streams with state when its file has state inputs, with left context when not.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureModel } from '../../stages/models/ensureModel.ts';
import { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { isChorusError } from '../../src/common/errors.ts';
import type { ThinkerRunner } from '../../stages/types.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import { chunkPlan, maxPcm16Diff, randomCodes, splitItems } from './codeFrames.ts';
import {
  optimumDecoderWithoutCache,
  optimumTextDecoder,
  vocoderWithStuckState,
  type TextDecoderSize,
} from './fixtures.ts';
import { code2wavSpec, promptIds, sampling, smallCode2Wav, talkerSpec, tempModelsDir, thinkerSpec } from './helpers.ts';

const otherSize: TextDecoderSize = { vocabSize: 300, hiddenSize: 48, numLayers: 3, numHeads: 4, intermediateSize: 96 };
let models: ReturnType<typeof tempModelsDir>;

beforeAll(() => {
  models = tempModelsDir();
});

afterAll(() => models?.cleanup());

function decode(runner: ThinkerRunner, prompt: number[], n: number, seqId: string): number[] {
  const tokens = [
    runner.execute([{ seqId, tokenIds: prompt, numTokens: prompt.length, sample: true, sampling: sampling() }])[0]
      .tokenId!,
  ];
  for (let i = 1; i < n; i++)
    tokens.push(
      runner.execute([{ seqId, tokenIds: [tokens.at(-1)!], numTokens: 1, sample: true, sampling: sampling() }])[0]
        .tokenId!,
    );
  runner.free(seqId);
  return tokens;
}

describe('bring-your-own models', () => {
  it('loads an Optimum input_ids decoder of other sizes; text works, hidden states are absent', async () => {
    const dir = join(models.dir, 'optimum');
    mkdirSync(dir);
    const path = join(dir, 'decoder_with_past_model.onnx');
    writeFileSync(path, await optimumTextDecoder(otherSize, 3));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ eos_token_id: 299, max_position_embeddings: 128 }));
    const runner = await createThinkerRunner({ model: { source: 'file', path } }, models.dir);
    try {
      expect(runner.vocabSize).toBe(300);
      expect(runner.eosTokenId).toBe(299);
      expect(runner.supports).toEqual({ inputsEmbeds: false, hiddenStates: false, embeddings: false });
      // Batched with a second sequence of another length, it decodes what it decodes alone.
      const alone = decode(runner, promptIds(9, 1), 12, 'a');
      const out = runner.execute([
        { seqId: 'b', tokenIds: promptIds(9, 1), numTokens: 9, sample: true, sampling: sampling() },
        { seqId: 'c', tokenIds: promptIds(9, 2), numTokens: 9, sample: true, sampling: sampling() },
      ]);
      expect(out[0].tokenId).toBe(alone[0]);
      expect(out[0].hidden.length).toBe(0);
      expect(() =>
        runner.execute([
          { seqId: 'd', inputsEmbeds: new Float32Array(48), numTokens: 1, sample: true, sampling: sampling() },
        ]),
      ).toThrow(/input_ids only/);
      // max_position_embeddings from config.json is enforced with a clear error.
      expect(() =>
        runner.execute([
          { seqId: 'e', tokenIds: promptIds(129, 3), numTokens: 129, sample: true, sampling: sampling() },
        ]),
      ).toThrow(/supports 128/);
    } finally {
      await runner.close();
    }
  });

  it('refuses a decoder exported without its cache, saying how to export it', async () => {
    const path = join(models.dir, 'x.onnx');
    writeFileSync(path, optimumDecoderWithoutCache(otherSize, 4));
    const err = await createThinkerRunner({ model: { source: 'file', path } }, models.dir).catch((e: unknown) => e);
    expect(isChorusError(err, 'CHORUS_ERR_MODEL_SIGNATURE')).toBe(true);
    expect((err as Error).message).toBe('thinker model x.onnx has no present.* outputs: export it with use_cache=True');
  });

  it('refuses a missing file and a model of the wrong kind', async () => {
    const missing = await createThinkerRunner(
      { model: { source: 'file', path: join(models.dir, 'nope.onnx') } },
      models.dir,
    ).catch((e: unknown) => e);
    expect(isChorusError(missing, 'CHORUS_ERR_MODEL_LOAD')).toBe(true);
    const path = join(models.dir, 'not-a-talker.onnx');
    writeFileSync(path, await optimumTextDecoder(otherSize, 5));
    const wrong = await createCode2WavRunner({ model: { source: 'file', path } }, models.dir).catch((e: unknown) => e);
    expect(isChorusError(wrong, 'CHORUS_ERR_MODEL_SIGNATURE')).toBe(true);
    expect((wrong as Error).message).toMatch(/needs a codes input/);
  });

  it('loads generated folders copied elsewhere as file models, with every feature', async () => {
    const generated = await ensureModel(thinkerSpec(), models.dir);
    const dir = join(models.dir, 'copied-thinker');
    mkdirSync(dir);
    for (const name of ['decoder_model.onnx', 'embed_tokens.onnx'])
      copyFileSync(generated.files[name], join(dir, name));
    const viaFile = await createThinkerRunner(
      { model: { source: 'file', path: join(dir, 'decoder_model.onnx') } },
      models.dir,
    );
    const viaSpec = await createThinkerRunner({ model: thinkerSpec() }, models.dir);
    try {
      expect(viaFile.supports).toEqual({ inputsEmbeds: true, hiddenStates: true, embeddings: true });
      expect(decode(viaFile, promptIds(6, 4), 8, 'f')).toEqual(decode(viaSpec, promptIds(6, 4), 8, 'g'));
    } finally {
      await viaFile.close();
      await viaSpec.close();
    }

    const talker = await ensureModel(talkerSpec(), models.dir);
    const talkerRunner = await createTalkerRunner(
      { model: { source: 'file', path: talker.files['talker.onnx'] } },
      models.dir,
    );
    expect(talkerRunner.numCodebooks).toBe(16);
    expect(talkerRunner.padRow.length).toBe(talkerRunner.conditionDim);
    await talkerRunner.close();
  });

  it('measures a foreign code2wav file; it streams with state if it has state inputs, else with context', async () => {
    const known = await createCode2WavRunner({ model: code2wavSpec() }, models.dir);
    const numFrames = 70;
    const codes = randomCodes(16, smallCode2Wav.codebookSize, numFrames, 3);
    const [offline] = known.decode([{ seqId: 'off', codes, numFrames, contextFrames: 0 }]);
    known.free('off');
    // The stateless graph was not made by the streaming builder: it has no state inputs, only codes.
    for (const streamingState of [true, false]) {
      const generated = await ensureModel(code2wavSpec(7, { ...smallCode2Wav, streamingState }), models.dir);
      const dir = join(models.dir, `foreign-vocoder-${streamingState}`);
      mkdirSync(dir);
      copyFileSync(generated.files['code2wav.onnx'], join(dir, 'vocoder.onnx')); // no manifest beside it
      const foreign = await createCode2WavRunner(
        { model: { source: 'file', path: join(dir, 'vocoder.onnx') } },
        models.dir,
      );
      try {
        expect(foreign.stateful).toBe(streamingState);
        expect(foreign.samplesPerFrame).toBe(known.samplesPerFrame);
        expect(foreign.receptiveFieldFrames).toBe(known.receptiveFieldFrames);
        const items = splitItems(codes, numFrames, chunkPlan(numFrames, 4, 25), 25, 'r');
        const streamed = concatFloat32(items.map((item) => foreign.decode([item])[0]));
        expect(maxPcm16Diff(streamed, offline)).toBeLessThanOrEqual(1);
        // With state each frame runs once; without, each chunk's left context (4, then 25 frames) runs again.
        const sent = items.reduce((n, item) => n + item.numFrames, 0);
        expect(sent).toBe(numFrames + 4 + 25 + 25);
        expect(foreign.framesDecoded).toBe(streamingState ? numFrames : sent);
        foreign.free('r');
        expect(foreign.numStates).toBe(0);
      } finally {
        await foreign.close();
      }
    }
    await known.close();
  });

  it('refuses a stateful code2wav file whose state does not carry from chunk to chunk', async () => {
    const path = join(models.dir, 'stuck-state.onnx');
    writeFileSync(path, vocoderWithStuckState(4));
    const err = await createCode2WavRunner({ model: { source: 'file', path } }, models.dir).catch((e: unknown) => e);
    expect(isChorusError(err, 'CHORUS_ERR_MODEL_SIGNATURE')).toBe(true);
    expect((err as Error).message).toMatch(/streaming through them differs from a whole decode/);
  });
});
