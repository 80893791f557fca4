/** Encoders (audio, image): media from the request -> embedding rows for the Thinker, batched one-shot forwards. */
import { Type } from '@sinclair/typebox';
import type { AudioEncoderSize, VisionEncoderSize } from '../../src/common/modelSpec.ts';
import type { StageGraph, StageSpec } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ProblemSink } from '../../src/common/problems.ts';
import { closed, generatedCommon, camelSizes, sizeOverrides } from '../../src/common/yamlSchema.ts';
import { encoderPresets } from './encoderSizes.ts';
import type { EncoderSpec } from './createEncoderRunner.ts';
import type { OnnxEncoderRunner } from './EncoderRunner.ts';
import { checkHeads, generatedModel } from '../presetFamily.ts';
import { defineStageKind, factsIn, runnerStage, type GeneratedModelContext } from '../StageKindDescriptor.ts';
import { EncoderFactsSchema, type EncoderArgs, type EncoderFacts } from './protocol.ts';

const encoderCommon = {
  ...generatedCommon,
  // output_size is derived from the Thinker they feed; needed only when that Thinker is a file model.
  ...sizeOverrides('hidden_size', 'num_layers', 'num_heads', 'intermediate_size', 'output_size'),
};
const audioYaml = Type.Object({ ...encoderCommon, ...sizeOverrides('num_mel_bins') }, closed);
const visionYaml = Type.Object({ ...encoderCommon, ...sizeOverrides('patch_size', 'merge_size') }, closed);

export const encoder = defineStageKind<EncoderArgs>({
  kind: 'encoder',
  workerType: 'generation',
  defaultMaxTokens: 1, // does not sample
  feeds: ['thinker'],
  readsRequest: true,
  sizedFrom: 'consumers',
  modelSchema: (modality) => (modality === 'image' || modality === 'video' ? visionYaml : audioYaml),
  addArgs: (ctx) => ({ encode: ctx.media?.encode.get(ctx.instance) ?? [] }),

  resolveGeneratedModel: (ctx, problems) =>
    generatedModel(ctx, encoderPresets, 'encoder preset', problems, (family) => {
      const outputSize = outputSizeOf(ctx, problems);
      if (outputSize === null) return null;
      const overrides = camelSizes(ctx.raw, ['output_size']);
      if (ctx.modality === 'image' || ctx.modality === 'video') {
        const size: VisionEncoderSize = { ...family.vision, ...overrides, outputSize };
        checkHeads(size, ctx, problems);
        return { kind: 'vision_encoder', size };
      }
      const size: AudioEncoderSize = { ...family.audio, ...overrides, outputSize };
      checkHeads(size, ctx, problems);
      return { kind: 'audio_encoder', size };
    }),

  ...runnerStage({
    load: loadEncoder,
    core: async (ctx, runner: OnnxEncoderRunner) => new (await import('./EncoderCore.ts')).EncoderCore(ctx, runner),
    facts: factsOf,
  }),

  ecIdentity: (f) => factsIn(EncoderFactsSchema, f)?.identity,
});

function factsOf(runner: OnnxEncoderRunner): EncoderFacts {
  const grid = runner.visionGrid;
  return {
    kind: 'encoder',
    modality: runner.modality,
    outputSize: runner.outputSize,
    identity: runner.identity,
    ...(grid ? { patchSize: grid.patchSize, mergeSize: grid.mergeSize } : {}),
  };
}

/** The width of the rows: the hidden size of the Thinker that reads them. */
function outputSizeOf(ctx: GeneratedModelContext, problems: ProblemSink): number | null {
  const given = ctx.raw.output_size as number | undefined;
  const thinker = ctx.consumers[0];
  if (!thinker) return null; // "feeds no stage" is reported by the graph rules
  if (thinker.model === null) return null; // the thinker's own problem is already reported
  if (thinker.model.source === 'file') {
    if (given === undefined) {
      problems.add(
        ctx.at,
        `cannot derive output_size: thinker "${thinker.stageId}" is a file model; set output_size (its hidden size)`,
      );
      return null;
    }
    return given;
  }
  if (thinker.model.kind !== 'thinker') return null;
  const derived = thinker.model.size.hiddenSize;
  if (given !== undefined && given !== derived) {
    problems.add(
      [...ctx.at, 'output_size'],
      `must be hidden_size of thinker "${thinker.stageId}" = ${derived}, got ${given} (leave it out: it is derived)`,
    );
    return null;
  }
  return derived;
}

function encoderSpecOf(spec: StageSpec): EncoderSpec {
  const m = spec.model;
  if (m.source === 'file') return { source: 'file', path: m.path, modality: spec.encoder!.modality };
  if (m.kind !== 'audio_encoder' && m.kind !== 'vision_encoder')
    throw new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${spec.stageId} is an encoder but its model is a ${m.kind}`);
  return m;
}

/** Loads the encoder and checks it cuts images the way main counts them. */
async function loadEncoder(spec: StageSpec, graph: StageGraph): Promise<OnnxEncoderRunner> {
  const { createEncoderRunner } = await import('./createEncoderRunner.ts');
  const runner = await createEncoderRunner(encoderSpecOf(spec), graph.modelsDir, { engine: spec.engine });
  const grid = runner.visionGrid;
  const want = spec.encoder?.imageGrid;
  if (grid && want && (grid.patchSize !== want.patchSize || grid.mergeSize !== want.mergeSize)) {
    await runner.close();
    throw new ChorusError(
      ErrorCodes.STAGE_BOOT,
      `stage ${spec.stageId}: the vision model cuts ${grid.patchSize} px patches merged ` +
        `${grid.mergeSize}x${grid.mergeSize}, but images are counted for ${want.patchSize} px merged ` +
        `${want.mergeSize}x${want.mergeSize}`,
    );
  }
  return runner;
}
