/** The Thinker: the LLM requests enter; text to the client, conditioning rows to the Talker. */
import { Type } from '@sinclair/typebox';
import type { StageGraph } from '../../src/common/graph.ts';
import type { ThinkerSize } from '../../src/common/modelSpec.ts';
import type { ThinkerRunner } from '../types.ts';
import {
  closed,
  generatedCommon,
  int,
  optional,
  transformer,
  camelSizes,
  weightsOverride,
} from '../../src/common/yamlSchema.ts';
import { presets } from '../generator/presets.ts';
import { MIN_BYTE_VOCAB_SIZE } from '../../src/tokenizer/ByteTokenizer.ts';
import { checkHeads, generatedModel } from '../presetFamily.ts';
import {
  defineStageKind,
  factsIn,
  runnerFacts,
  runnerStage,
  type AddArgsContext,
  type KindLookup,
  type TextFeed,
} from '../StageKindDescriptor.ts';
import { TalkerFactsSchema } from '../talker/protocol.ts';
import { thinkerStatsOf, type ThinkerArgs, type ThinkerFacts } from './protocol.ts';

const modelYaml = Type.Object(
  { ...generatedCommon, ...transformer, vocab_size: optional(int(1)), accept_layer: optional(int(0)) },
  closed,
);

export const thinker = defineStageKind<ThinkerArgs>({
  kind: 'thinker',
  workerType: 'ar',
  defaultMaxTokens: 256,
  feeds: ['talker'], // and the kinds that read its text (readsText)
  finalOutput: 'text',
  entry: true,
  modelSchema: () => modelYaml,

  // Requests enter here: the prompt, its media plan, the EC store's drops and the session prefix come with it.
  addArgs: (ctx) => ({
    promptTokenIds: ctx.promptTokenIds,
    ...(ctx.media ? { media: ctx.media.thinker } : {}),
    ...(ctx.request.prefix ? { prefix: ctx.request.prefix } : {}),
    ...(ctx.ecDrop.length > 0 ? { ecDrop: ctx.ecDrop } : {}),
    ...(ctx.firstPacketTokens !== undefined ? { firstPacketTokens: ctx.firstPacketTokens } : {}),
    ...(ctx.request.grammar ? { grammar: ctx.request.grammar } : {}),
    ...(ctx.request.logprobs !== undefined ? { logprobs: ctx.request.logprobs } : {}),
    ...speechPerToken(ctx),
  }),

  resolveGeneratedModel: (ctx, problems) =>
    generatedModel(ctx, presets, 'model preset', problems, (family) => {
      const size: ThinkerSize = { ...family.thinker, ...camelSizes(ctx.raw), ...weightsOverride(ctx.raw) };
      checkHeads(size, ctx, problems);
      if (size.acceptLayer >= size.numLayers)
        problems.add([...ctx.at, 'accept_layer'], `must be < num_layers (${size.numLayers}), got ${size.acceptLayer}`);
      if (size.vocabSize < MIN_BYTE_VOCAB_SIZE) {
        problems.add(
          [...ctx.at, 'vocab_size'],
          `must be >= ${MIN_BYTE_VOCAB_SIZE} for the built-in byte tokenizer (256 bytes + 16 specials + words), ` +
            `got ${size.vocabSize}`,
        );
      }
      return { kind: 'thinker', size };
    }),

  ...runnerStage({
    load: async (spec, graph) => (await import('../runners.ts')).createThinkerRunner(spec, graph.modelsDir),
    core: async (ctx, runner: ThinkerRunner, graph, kinds) => {
      const { ThinkerCore } = await import('./ThinkerCore.ts');
      const { ThinkerEc } = await import('./ThinkerEc.ts');
      const ec = ctx.ecStore
        ? await ThinkerEc.open(ctx.ecStore, `${ctx.spec.stageId}-${process.pid}`, ctx.post, ctx.log)
        : null;
      return new ThinkerCore(ctx, runner, ec, textFeedOf(ctx.spec.stageId, graph, kinds));
    },
    facts: factsOf,
  }),

  promptLimits: (m) =>
    m.source === 'generated' && m.kind === 'thinker'
      ? { vocabSize: m.size.vocabSize, maxPositions: m.size.maxPositions }
      : {},
  prefixHeld: (stats) => thinkerStatsOf(stats).prefix?.held,
  hearsFirstAudio: 'always',
});

/**
 * What the stage this Thinker feeds takes from it: its text, through the feed the consumer's kind makes (readsText:
 * a tts stage), or else its conditioning rows (a Talker, Thinker2Talker): null.
 */
function textFeedOf(stageId: string, graph: StageGraph, kinds: KindLookup): ((asyncChunk: boolean) => TextFeed) | null {
  for (const consumer of graph.stages.filter((s) => s.inputs.some((i) => i.from === stageId))) {
    const readsText = kinds(consumer.kind).readsText;
    if (readsText?.from.includes('thinker')) return (asyncChunk) => readsText.feed(asyncChunk);
  }
  return null;
}

function factsOf(runner: ThinkerRunner): ThinkerFacts {
  const lacks = Object.entries(runner.supports ?? {})
    .filter(([, ok]) => !ok)
    .map(([what]) => what);
  return {
    ...runnerFacts('thinker', runner, ['vocabSize', 'hiddenSize', 'eosTokenId', 'kvBytesPerToken']),
    ...(lacks.length > 0 ? { lacks } : {}),
  };
}

/** A spoken answer's audio per text token (its Talker's frames per token times a frame's): speech lead reads it. */
function speechPerToken(ctx: AddArgsContext): Pick<ThinkerArgs, 'speechMsPerToken'> {
  const framesPerToken = ctx.chosenFacts.map((f) => factsIn(TalkerFactsSchema, f)?.framesPerToken).find(Boolean);
  return ctx.playback && framesPerToken ? { speechMsPerToken: framesPerToken * ctx.playback.frameMs } : {};
}
