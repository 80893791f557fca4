/**
 * The `tts:` section of a tts stage: the voice's synthesis scales (each overrides the voice config's), its speaker,
 * and the phrase rules (PhraseSplitter.ts). Checked with the rest of the YAML; defaults here.
 */
import { Type, type Static } from '@sinclair/typebox';
import { closed, int, optional } from '../../src/common/yamlSchema.ts';
import { DEFAULT_PHRASE_POLICY } from './PhraseSplitter.ts';

/** The rate of the audio a tts stage sends (the Realtime API's pcm16 rate; chat audio is written at it too). */
export const OUTPUT_RATE_HZ = 24000;
/** The nominal frame playback plans count a tts stage's audio in: 20 ms at OUTPUT_RATE_HZ. */
export const OUTPUT_FRAME_SAMPLES = 480;

const scale = (description: string) => optional(Type.Number({ minimum: 0, description }));

export const TtsYaml = Type.Object(
  {
    noise_scale: scale('noise of the flow prior (timbre variation); default: the voice config, 0: none'),
    length_scale: optional(Type.Number({ exclusiveMinimum: 0, description: 'speaking slowness (> 1 slower)' })),
    noise_w: scale('noise of the duration predictor (rhythm variation); default: the voice config, 0: none'),
    speaker_id: optional(int(0, 'multi-speaker voices: which speaker (default 0)')),
    first_phrase_min_chars: optional(
      int(1, 'the first phrase ends at the first clause mark past this many characters (earlier first audio)'),
    ),
    first_phrase_max_words: optional(int(0, 'the first phrase ends after this many words if no mark comes (0: never)')),
    phrase_max_chars: optional(int(1, 'a later phrase ends at a clause mark past this many characters')),
    lead_margin: optional(
      Type.Number({
        minimum: 0,
        description:
          'a later phrase is cut early when its listener has less audio in hand than this many times the synthesis ' +
          'ahead of it (0: never)',
      }),
    ),
  },
  closed,
);

/** The lead rule's margin by default (stages/tts/lead.ts). */
export const DEFAULT_LEAD_MARGIN = 2;

/** Settings of a tts stage: its `tts:` section, resolved (StageSpec.settings of a tts stage). */
export interface TtsSettings {
  /** How streamed text is cut into phrases (PhraseSplitter.ts). */
  readonly phrases: { readonly firstMinChars: number; readonly firstMaxWords: number; readonly maxChars: number };
  /** Overrides of the voice config's synthesis scales. */
  readonly scales: { readonly noiseScale?: number; readonly lengthScale?: number; readonly noiseW?: number };
  /** Multi-speaker voices: which speaker. */
  readonly speakerId?: number;
  /** The lead rule's margin (stages/tts/lead.ts; 0: off). */
  readonly leadMargin: number;
}

export const DEFAULT_TTS_SETTINGS: TtsSettings = {
  phrases: DEFAULT_PHRASE_POLICY,
  scales: {},
  leadMargin: DEFAULT_LEAD_MARGIN,
};

/** A tts stage's settings (the defaults when its section is absent). */
export function ttsSettingsOf(spec: { readonly settings?: unknown }): TtsSettings {
  return (spec.settings as TtsSettings | undefined) ?? DEFAULT_TTS_SETTINGS;
}

export function resolveTtsSettings(raw: Static<typeof TtsYaml> | undefined): TtsSettings {
  const y = raw ?? {};
  const d = DEFAULT_PHRASE_POLICY;
  return {
    phrases: {
      firstMinChars: y.first_phrase_min_chars ?? d.firstMinChars,
      firstMaxWords: y.first_phrase_max_words ?? d.firstMaxWords,
      maxChars: y.phrase_max_chars ?? d.maxChars,
    },
    scales: {
      ...(y.noise_scale !== undefined ? { noiseScale: y.noise_scale } : {}),
      ...(y.length_scale !== undefined ? { lengthScale: y.length_scale } : {}),
      ...(y.noise_w !== undefined ? { noiseW: y.noise_w } : {}),
    },
    ...(y.speaker_id !== undefined ? { speakerId: y.speaker_id } : {}),
    leadMargin: y.lead_margin ?? DEFAULT_LEAD_MARGIN,
  };
}
