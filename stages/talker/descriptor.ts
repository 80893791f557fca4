/** The Talker: codec frames (16 codebooks) conditioned on the Thinker's rows, autoregressive. */
import { Type } from '@sinclair/typebox';
import type { TalkerSize } from '../../src/common/modelSpec.ts';
import { Code2WavFactsSchema } from '../code2wav/protocol.ts';
import type { TalkerRunner } from '../types.ts';
import type { ProblemSink } from '../../src/common/problems.ts';
import {
  closed,
  generatedCommon,
  transformer,
  camelSizes,
  sizeOverrides,
  weightsOverride,
} from '../../src/common/yamlSchema.ts';
import { presets } from '../generator/presets.ts';
import { checkHeads, generatedModel } from '../presetFamily.ts';
import { defineStageKind, factsIn, factsPicked, runnerFacts, runnerStage } from '../StageKindDescriptor.ts';
import type { GeneratedModelContext } from '../StageKindDescriptor.ts';
import { TalkerFactsSchema, type TalkerArgs, type TalkerFacts } from './protocol.ts';

const modelYaml = Type.Object(
  {
    ...generatedCommon,
    ...transformer,
    // condition_dim is normally derived (2 x the upstream thinker's hidden_size); needed only when that thinker is a
    // file model.
    ...sizeOverrides('codebook_size', 'num_codebooks', 'frames_per_token', 'condition_dim'),
  },
  closed,
);

export const talker = defineStageKind<TalkerArgs>({
  kind: 'talker',
  workerType: 'ar',
  defaultMaxTokens: 4096, // codec frames: 5.5 min of audio at 12.5 frames/s
  feeds: ['code2wav'],
  hearsFirstAudio: 'beforeAudio', // its first chunk is sized once it makes it: audio out, nothing left to change
  requestSampling: 'talkerSampling',
  modelSchema: () => modelYaml,

  addArgs: (ctx) => ({
    initialCodecChunkFrames: ctx.request.initialCodecChunkFrames,
    ...(ctx.firstPacketTokens !== undefined ? { firstPacketTokens: ctx.firstPacketTokens } : {}),
    // A stateful vocoder keeps the context itself: resending it would decode those frames twice.
    ...(ctx.chosenFacts.some((f) => factsIn(Code2WavFactsSchema, f)?.stateful === true)
      ? { codecLeftContextFrames: 0 }
      : {}),
    ...(ctx.playback ? { playback: ctx.playback } : {}),
  }),

  resolveGeneratedModel: (ctx, problems) =>
    generatedModel(ctx, presets, 'model preset', problems, (family) => {
      const conditionDim = conditionDimOf(ctx, problems);
      const size: TalkerSize = {
        ...family.talker,
        ...camelSizes(ctx.raw, ['condition_dim']),
        ...weightsOverride(ctx.raw),
        conditionDim: conditionDim ?? 0,
      };
      checkHeads(size, ctx, problems);
      return conditionDim === null ? null : { kind: 'talker', size };
    }),

  ...runnerStage({
    load: async (spec, graph) => (await import('../runners.ts')).createTalkerRunner(spec, graph.modelsDir),
    core: async (ctx, runner: TalkerRunner) => new (await import('./TalkerCore.ts')).TalkerCore(ctx, runner),
    facts: factsOf,
  }),

  // Codec frames per text token: maps played audio back to the text it voiced.
  audioFacts: factsPicked(TalkerFactsSchema, ['framesPerToken']),
});

function factsOf(runner: TalkerRunner): TalkerFacts {
  return runnerFacts('talker', runner, ['conditionDim', 'numCodebooks', 'framesPerToken', 'kvBytesPerToken']);
}

/** conditionDim = 2 x the upstream thinker's hidden size ([thinker embed | accept hidden] per row). */
function conditionDimOf(ctx: GeneratedModelContext, problems: ProblemSink): number | null {
  const given = ctx.raw.condition_dim as number | undefined;
  const thinker = ctx.inputs.find((u) => u.kind === 'thinker');
  if (!thinker) {
    problems.add(
      [...ctx.at.slice(0, -1), 'inputs'],
      'a talker needs a thinker stage among its inputs (its condition rows come from the thinker)',
    );
    return null;
  }
  if (thinker.model === null) return null; // the thinker's own problem is already reported
  if (thinker.model.source === 'file') {
    if (given === undefined) {
      problems.add(
        ctx.at,
        `cannot derive condition_dim: the upstream thinker "${thinker.stageId}" is a file model; ` +
          'set condition_dim (2 x its hidden size)',
      );
      return null;
    }
    return given;
  }
  if (thinker.model.kind !== 'thinker') return null;
  const derived = 2 * thinker.model.size.hiddenSize;
  if (given !== undefined && given !== derived) {
    problems.add(
      [...ctx.at, 'condition_dim'],
      `must be 2 x hidden_size of thinker "${thinker.stageId}" = ${derived}, got ${given} (leave it out: it is ` +
        `derived)`,
    );
    return null;
  }
  return derived;
}
