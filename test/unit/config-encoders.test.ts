/** Encoder stages in the stage graph: generated encoders sized from their Thinker, settings, and the graph rules. */
import path from 'node:path';
import { configProblems } from '../helpers/configProblems.ts';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../src/config/loadConfig.ts';
import { repoRoot } from '../../src/config/paths.ts';
import { encoderPresets } from '../../stages/encoder/encoderSizes.ts';
import { presets } from '../../stages/generator/presets.ts';

const problemsOf = (yaml: string) => configProblems(yaml);

const audioEncoder = `  - stage_id: audio-encoder
    kind: encoder
    encoder: {modality: audio}
`;
const thinkerWith = (inputs: string) => `  - stage_id: thinker
    kind: thinker
    inputs: [${inputs}]
    final_output: true
    final_output_type: text
`;

describe('encoder stages', () => {
  it('tiny-omni: two encoders feed the thinker, which stays the entry; the rest is tiny-omni-text-in', async () => {
    const load = (n: string) => loadConfig(path.join(repoRoot(), 'configs', `${n}.yaml`), { cores: 64 });
    const [mm, plain] = await Promise.all([load('tiny-omni'), load('tiny-omni-text-in')]);
    expect(mm.entryStageId).toBe('thinker');
    expect(mm.stages.map((s) => [s.stageId, s.kind, s.workerType])).toEqual([
      ['audio-encoder', 'encoder', 'generation'],
      ['image-encoder', 'encoder', 'generation'],
      ['thinker', 'thinker', 'ar'],
      ['talker', 'talker', 'ar'],
      ['code2wav', 'code2wav', 'generation'],
    ]);
    const [audio, image, thinker] = mm.stages;
    const hidden = presets.tiny.thinker.hiddenSize;
    expect(audio.model).toEqual({
      source: 'generated',
      kind: 'audio_encoder',
      preset: 'tiny',
      seed: 0,
      size: { ...encoderPresets.tiny.audio, outputSize: hidden },
    });
    expect(image.model).toEqual({
      source: 'generated',
      kind: 'vision_encoder',
      preset: 'tiny',
      seed: 0,
      size: { ...encoderPresets.tiny.vision, outputSize: hidden },
    });
    expect(audio.encoder).toEqual({
      modality: 'audio',
      cacheBytes: 64 * 1024 ** 2,
      budgetEmbeddings: 2048,
      maxBatchSize: 8,
      batchTimeoutMs: 5,
      onFailure: 'fail',
      maxAudioSeconds: 1200,
      timeoutMs: 30000,
      maxEncodeBytes: null,
      imageGrid: null,
      video: null,
    });
    expect(image.encoder?.imageGrid).toEqual({ patchSize: 14, mergeSize: 2, minPixels: 56 * 56, maxPixels: 224 * 224 });
    expect(thinker.inputs).toEqual([
      { from: 'audio-encoder', connector: 'shm' },
      { from: 'image-encoder', connector: 'shm' },
    ]);
    expect(thinker.encoder).toBeUndefined();
    // Thinker, Talker and Code2Wav are exactly the default pipeline's (only the thinker's inputs differ).
    const strip = (s: (typeof mm.stages)[number]) => ({ ...s, inputs: [] });
    expect(mm.stages.slice(2).map(strip)).toEqual(plain.stages.map(strip));
  });

  it('derives the encoder width from its thinker, takes size overrides, and the graph-wide failure policy', () => {
    const yaml = `on_encoder_failure: text_only
stages:
  - stage_id: audio-encoder
    kind: encoder
    model: {num_layers: 3, seed: 5}
    encoder: {modality: audio, cache_bytes: 1MiB, batch_timeout_ms: 0}
  - stage_id: image-encoder
    kind: encoder
    model: {preset: omni, merge_size: 4}
    encoder: {modality: image, on_failure: fail}
${thinkerWith('{from: audio-encoder}, {from: ' + 'image-encoder}').replace(
  '    kind: thinker\n',
  '    kind: thinker\n    model: {hidden_size: 64, num_heads: 2}\n',
)}`;
    const graph = parseConfig(yaml, 'x.yaml', { cores: 64 });
    const [audio, image] = graph.stages;
    expect(audio.model).toMatchObject({
      kind: 'audio_encoder',
      seed: 5,
      size: { ...encoderPresets.tiny.audio, numLayers: 3, outputSize: 64 },
    });
    expect(image.model).toMatchObject({
      kind: 'vision_encoder',
      preset: 'omni',
      size: { ...encoderPresets.omni.vision, mergeSize: 4, outputSize: 64 },
    });
    expect(audio.encoder).toMatchObject({ cacheBytes: 1024 ** 2, batchTimeoutMs: 0, onFailure: 'text_only' });
    expect(image.encoder).toMatchObject({ onFailure: 'fail', imageGrid: { patchSize: 14, mergeSize: 4 } });
  });

  it('refuses encoders that read from stages, lack settings, feed nothing, or duplicate a modality', () => {
    const yaml = `stages:
  - stage_id: audio-encoder
    kind: encoder
    encoder: {modality: audio}
  - stage_id: audio-2
    kind: encoder
    encoder: {modality: audio}
  - stage_id: loose
    kind: encoder
    encoder: {modality: image}
  - stage_id: bare
    kind: encoder
${thinkerWith('{from: audio-encoder}, {from: audio-2}, {from: bare}')}  - stage_id: chained
    kind: encoder
    encoder: {modality: image}
    inputs: [{from: thinker}]
`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:5 stages[1]: thinker "thinker" already reads audio from encoder "audio-encoder": one encoder ' +
        'per modality (use replicas for more throughput)',
      'configs/x.yaml:8 stages[2]: encoder "loose" must feed exactly one thinker (no stage reads from it): list it ' +
        "in the thinker's inputs",
      'configs/x.yaml:11 stages[3]: an encoder stage needs `encoder: {modality: audio}` (or image): what it encodes',
      'configs/x.yaml:18 stages[5]: encoder "chained" must feed exactly one thinker (no stage reads from it): list ' +
        "it in the thinker's inputs",
      'configs/x.yaml:21 stages[5].inputs: encoder stage "chained" reads its media from the request, not from ' +
        "another stage: remove its inputs (list it in the thinker's inputs instead)",
      'configs/x.yaml:21 stages[5].inputs: an encoder cannot read from "thinker" (a thinker): the edges that exist ' +
        'are thinker -> talker, thinker -> tts, talker -> code2wav, encoder -> thinker',
    ]);
  });

  it(
    'refuses an output width that contradicts the thinker, encoder settings on other stages, and a non-thinker ' +
      'entry',
    () => {
      const wrongWidth = `stages:
${audioEncoder.replace('    kind: ' + 'encoder\n', '    kind: encoder\n    model: {output_size: 100}\n')}${thinkerWith(
        '{from: audio-encoder}',
      ).replace('    kind: ' + 'thinker\n', '    kind: thinker\n    encoder: {modality: audio}\n')}`;
      expect(problemsOf(wrongWidth)).toEqual([
        `configs/x.yaml:4 stages[0].model.output_size: must be hidden_size of thinker "thinker" = ` +
          `${presets.tiny.thinker.hiddenSize}, got 100 (leave it out: it is derived)`,
        'configs/x.yaml:8 stages[1].encoder: only encoder stages take `encoder:` settings (this stage is a thinker)',
      ]);
      const vocoderFirst = `stages:
  - stage_id: code2wav
    kind: code2wav
    final_output: true
    final_output_type: audio
`;
      expect(problemsOf(vocoderFirst)).toEqual([
        'configs/x.yaml:3 stages[0].kind: the entry stage (the one requests enter; it has no inputs but encoders) ' +
          'must be a thinker, got code2wav',
      ]);
    },
  );
});
