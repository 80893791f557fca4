/**
 * A Piper voice's JSON config (`<voice>.onnx.json`, beside the ONNX file): its sample rate, eSpeak voice, phoneme id
 * map and synthesis scales. Checked once when the stage loads the voice, with messages that name the file and field.
 */
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { idMapProblems, type PhonemeIdMap } from './phonemeIds.ts';

const scale = Type.Number({ minimum: 0 });

const VoiceJson = Type.Object({
  audio: Type.Object({ sample_rate: Type.Integer({ minimum: 1 }) }),
  espeak: Type.Object({ voice: Type.String({ minLength: 1 }) }),
  phoneme_type: Type.Optional(Type.String()),
  phoneme_id_map: Type.Record(Type.String(), Type.Array(Type.Integer({ minimum: 0 }))),
  num_symbols: Type.Optional(Type.Integer({ minimum: 1 })),
  num_speakers: Type.Optional(Type.Integer({ minimum: 1 })),
  hop_length: Type.Optional(Type.Integer({ minimum: 1 })),
  inference: Type.Optional(
    Type.Object({
      noise_scale: Type.Optional(scale),
      length_scale: Type.Optional(scale),
      noise_w: Type.Optional(scale),
    }),
  ),
});

/** The synthesis scales Piper's model takes (its `scales` input, in this order: noise, length, noise_w). */
export interface VoiceScales {
  /** How much noise the flow's prior gets (variation of timbre); 0: none. */
  readonly noiseScale: number;
  /** Speaking slowness: durations are multiplied by it (> 1 slower). */
  readonly lengthScale: number;
  /** How much noise the duration predictor gets (variation of rhythm); 0: none. */
  readonly noiseW: number;
}

export interface VoiceConfig {
  readonly sampleRateHz: number;
  readonly espeakVoice: string;
  readonly phonemeIdMap: PhonemeIdMap;
  readonly numSpeakers: number;
  /** Audio samples per duration frame (256 for Piper's VITS voices). */
  readonly hopLength: number;
  readonly scales: VoiceScales;
}

// Piper's defaults for a config that leaves them out.
const DEFAULT_SCALES: VoiceScales = { noiseScale: 0.667, lengthScale: 1, noiseW: 0.8 };
const DEFAULT_HOP_LENGTH = 256;

export function loadVoiceConfig(path: string): VoiceConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ChorusError(
      ErrorCodes.MODEL_LOAD,
      `cannot read the voice config ${path}: ${(err as Error).message} ` +
        '(a Piper voice needs its .onnx.json beside the .onnx)',
      { cause: err },
    );
  }
  return parseVoiceConfig(raw, path);
}

export function parseVoiceConfig(raw: unknown, path: string): VoiceConfig {
  const errors = [...Value.Errors(VoiceJson, raw)].map((e) => `${e.path || '/'} ${e.message}`);
  if (errors.length > 0) throw invalid(path, errors);
  const json = raw as Static<typeof VoiceJson>;
  const problems = idMapProblems(json.phoneme_id_map);
  if ((json.phoneme_type ?? 'espeak') !== 'espeak') {
    problems.push(`phoneme_type "${json.phoneme_type}" is not supported (only espeak phonemes are)`);
  }
  if (problems.length > 0) throw invalid(path, problems);
  const inference = json.inference ?? {};
  return {
    sampleRateHz: json.audio.sample_rate,
    espeakVoice: json.espeak.voice,
    phonemeIdMap: json.phoneme_id_map,
    numSpeakers: json.num_speakers ?? 1,
    hopLength: json.hop_length ?? DEFAULT_HOP_LENGTH,
    scales: {
      noiseScale: inference.noise_scale ?? DEFAULT_SCALES.noiseScale,
      lengthScale: inference.length_scale ?? DEFAULT_SCALES.lengthScale,
      noiseW: inference.noise_w ?? DEFAULT_SCALES.noiseW,
    },
  };
}

function invalid(path: string, problems: readonly string[]): ChorusError {
  return new ChorusError(ErrorCodes.MODEL_LOAD, `voice config ${path}: ${problems.join('; ')}`);
}
