/** Code2Wav: the vocoder, codec frames -> PCM, one forward per chunk. Audio to the client. */
import { Type } from '@sinclair/typebox';
import type { Code2WavSize } from '../../src/common/modelSpec.ts';
import type { Code2WavRunner } from '../types.ts';
import type { ProblemSink } from '../../src/common/problems.ts';
import { closed, generatedCommon, optional, camelSizes, sizeOverrides } from '../../src/common/yamlSchema.ts';
import { presets } from '../generator/presets.ts';
import { generatedModel } from '../presetFamily.ts';
import { defineStageKind, factsPicked, runnerFacts, runnerStage } from '../StageKindDescriptor.ts';
import type { GeneratedModelContext } from '../StageKindDescriptor.ts';
import { Code2WavFactsSchema, type Code2WavArgs, type Code2WavFacts } from './protocol.ts';

const modelYaml = Type.Object(
  {
    ...generatedCommon,
    ...sizeOverrides(
      'num_codebooks',
      'codebook_size',
      'hidden_size',
      'num_layers',
      'kernel_size',
      'samples_per_frame',
      'sample_rate_hz',
    ),
    /** false: the stateless graph (left context re-decoded with every chunk), e.g. to measure what state saves. */
    streaming_state: optional(Type.Boolean()),
  },
  closed,
);

export const code2wav = defineStageKind<Code2WavArgs>({
  kind: 'code2wav',
  workerType: 'generation',
  defaultMaxTokens: 1, // does not sample; the field only keeps SamplingParams uniform
  finalOutput: 'audio',
  modelSchema: () => modelYaml,
  addArgs: (ctx) => (ctx.playback ? { playback: ctx.playback } : {}),

  resolveGeneratedModel: (ctx, problems) =>
    generatedModel(ctx, presets, 'model preset', problems, (family) => {
      const streamingState = ctx.raw.streaming_state;
      const size: Code2WavSize = {
        ...family.code2wav,
        ...camelSizes(ctx.raw),
        ...(typeof streamingState === 'boolean' ? { streamingState } : {}),
      };
      checkCodebooksMatchTalker(ctx, size, problems);
      return { kind: 'code2wav', size };
    }),

  ...runnerStage({
    load: async (spec, graph) => (await import('../runners.ts')).createCode2WavRunner(spec, graph.modelsDir),
    core: async (ctx, runner: Code2WavRunner) => new (await import('./Code2WavCore.ts')).Code2WavCore(ctx, runner),
    facts: factsOf,
  }),

  audioFacts: factsPicked(Code2WavFactsSchema, ['sampleRateHz', 'samplesPerFrame']),
});

function factsOf(runner: Code2WavRunner): Code2WavFacts {
  return runnerFacts('code2wav', runner, [
    'numCodebooks',
    'sampleRateHz',
    'samplesPerFrame',
    'receptiveFieldFrames',
    'stateful',
  ]);
}

/** The vocoder must decode every code the talker emits. */
function checkCodebooksMatchTalker(ctx: GeneratedModelContext, size: Code2WavSize, problems: ProblemSink): void {
  // A file-model talker's sizes are unknown here; the stage checks them against the ONNX at load.
  const talker = ctx.inputs.find((u) => u.kind === 'talker');
  if (talker?.model?.source !== 'generated' || talker.model.kind !== 'talker') return;
  const theirs = talker.model.size;
  for (const [key, mine, other] of [
    ['codebook_size', size.codebookSize, theirs.codebookSize],
    ['num_codebooks', size.numCodebooks, theirs.numCodebooks],
  ] as const) {
    if (mine === other) continue;
    problems.add(
      key in ctx.raw ? [...ctx.at, key] : ctx.at,
      `${key} ${mine} does not match talker "${talker.stageId}" (stages[${talker.index}].model.${key} = ${other}); ` +
        'the vocoder must decode every code the talker emits — set both to the same value',
    );
  }
}
