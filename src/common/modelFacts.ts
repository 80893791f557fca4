/**
 * What a stage's loaded model is, as the stage reports it in READY. The engine and the server read these facts
 * (the vocoder's sample rate, samples per codec frame) instead of guessing them from the config: a
 * bring-your-own model says what it is only once it is loaded.
 */
import type { MediaModality } from './graph.ts';

export type ModelFacts =
  | {
      readonly kind: 'thinker';
      readonly vocabSize: number;
      readonly hiddenSize: number;
      readonly eosTokenId: number;
      /** KV cache bytes one position costs (keys and values, every layer). */
      readonly kvBytesPerToken: number;
      /** What a bring-your-own model lacks (inputsEmbeds, hiddenStates, embeddings): it serves text only. */
      readonly lacks?: readonly string[];
    }
  | {
      readonly kind: 'talker';
      readonly conditionDim: number;
      readonly numCodebooks: number;
      readonly framesPerToken: number;
      readonly kvBytesPerToken: number;
    }
  | {
      readonly kind: 'code2wav';
      readonly numCodebooks: number;
      readonly sampleRateHz: number;
      readonly samplesPerFrame: number;
      readonly receptiveFieldFrames: number;
      /** The vocoder carries state between chunks (each frame decoded once); false: left context decoded again. */
      readonly stateful?: boolean;
    }
  | {
      readonly kind: 'encoder';
      readonly modality: MediaModality;
      /** Width of one row (the Thinker's hidden size). */
      readonly outputSize: number;
      /** The encoder's identity in cache keys (model hash, preprocessing version, width). */
      readonly identity: string;
      /** Vision encoders: how images are cut. */
      readonly patchSize?: number;
      readonly mergeSize?: number;
    };

/** The audio a pipeline returns, from its vocoder's facts. */
export interface AudioOutputFacts {
  readonly sampleRateHz: number;
  readonly samplesPerFrame: number;
  /** Codec frames the Talker makes per text token (maps played audio back to the text it voiced); null unknown. */
  readonly framesPerToken: number | null;
}
