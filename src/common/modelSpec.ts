/**
 * What a stage's model is (the stage graph's `model:`): a generated model with its sizes (which fields apply depends
 * on the stage kind), or an ONNX file, imported from a GGUF file or given as is.
 */

/**
 * How a generated transformer holds its layers' projections (q|k|v, out, up, down): float32, or 4-bit blocks of 32
 * (q4, as GGUF's Q4_0; onnxruntime's MatMulNBits). Heads, embeddings and norms stay float32.
 */
export const WEIGHT_FORMS = ['float32', 'q4'] as const;
export type WeightForm = (typeof WEIGHT_FORMS)[number];

/** Sizes of a generated model. Which fields apply depends on the stage kind. */
export interface ThinkerSize {
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  readonly maxPositions: number;
  /** The layer whose output is sent to the Talker as "accept" hidden states (0-based, < numLayers). */
  readonly acceptLayer: number;
  /** Scale of the output head, large enough that greedy choices are never near-ties under float noise. */
  readonly logitScale: number;
  /** Absent: float32 (models built before the field). */
  readonly weights?: WeightForm;
}

export interface TalkerSize {
  readonly codebookSize: number; // codebook-0 vocabulary, excluding the special tokens (bos, eos)
  readonly numCodebooks: number; // 16
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  readonly maxPositions: number;
  readonly framesPerToken: number; // codec frames generated per Thinker text token
  /**
   * Width of one conditioning row from the Thinker: thinker embed + accept hidden (derived, 2 * thinker hiddenSize).
   */
  readonly conditionDim: number;
  readonly logitScale: number;
  /** Absent: float32 (models built before the field). */
  readonly weights?: WeightForm;
}

export interface Code2WavSize {
  readonly numCodebooks: number;
  readonly codebookSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly kernelSize: number;
  readonly samplesPerFrame: number; // 1920 at 24 kHz = 12.5 frames/s
  readonly sampleRateHz: number; // 24000
  /**
   * Build the streaming variant (causal-conv state in and out, so each frame is decoded once) instead of the
   * stateless graph that needs its receptive field re-sent as left context with every chunk.
   */
  readonly streamingState: boolean;
}

/**
 * Sizes of the generated tiny-omni encoders. outputSize is the Thinker's hiddenSize: encoder rows are spliced
 * into the Thinker's inputs_embeds, so the two must agree; the loader derives it from the downstream Thinker.
 */
export interface AudioEncoderSize {
  /** Mel bins of the input features (80, as Whisper's front end). */
  readonly numMelBins: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export interface VisionEncoderSize {
  /** Side of a square patch in pixels (14, as CLIP ViT-L/14 and Qwen2-VL). */
  readonly patchSize: number;
  /** mergeSize x mergeSize neighbouring patches become one embedding (2, as Qwen2-VL). */
  readonly mergeSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export type EncoderSize = AudioEncoderSize | VisionEncoderSize;
export type EncoderModelKind = 'audio_encoder' | 'vision_encoder';

export type GeneratedModelSpec =
  | {
      readonly source: 'generated';
      readonly kind: 'thinker';
      readonly preset: string;
      readonly seed: number;
      readonly size: ThinkerSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'talker';
      readonly preset: string;
      readonly seed: number;
      readonly size: TalkerSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'code2wav';
      readonly preset: string;
      readonly seed: number;
      readonly size: Code2WavSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'audio_encoder';
      readonly preset: string;
      readonly seed: number;
      readonly size: AudioEncoderSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'vision_encoder';
      readonly preset: string;
      readonly seed: number;
      readonly size: VisionEncoderSize;
    };

export interface FileModelSpec {
  readonly source: 'file';
  /** Absolute path of the ONNX file (resolved against the YAML file's folder). */
  readonly path: string;
  /** Folder with tokenizer.json (+ tokenizer_config.json), absolute; Thinker only. */
  readonly tokenizer?: string;
  /**
   * The GGUF file this model is imported from (YAML `model: {gguf: ...}`, Thinker only): `path` and `tokenizer` then
   * name its folder in the model cache, which loadConfig (or ensureModel) fills on first use.
   */
  readonly gguf?: string;
}

export type ModelSpec = GeneratedModelSpec | FileModelSpec;
