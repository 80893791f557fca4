/**
 * What defines a modality, in one place: src/media/modalities/<name>.ts implements this for audio, image and video,
 * and index.ts lists them. Everything else (the chat and Realtime front ends, the engine's prompt and media plan, the
 * encoder stage, the encoder-output store) asks the registry instead of naming a modality, so adding one is its own
 * file plus a registry line (and its encoder's model).
 *
 * The way of one item: the front end turns a client's content part into an engine ContentPart (parsing: base64,
 * data: URLs, a fetch where allowed, a video's decode in a child process); main counts its embeddings from what it
 * holds (`layout`: a header, or the sampled grid) before admitting the request, expands its placeholder to that many
 * positions and sends it to its encoder stage as a chunk (`body`); the encoder stage decodes it into the encoder's
 * input and its content key (`prepare`); the encoder-output store and the encoder's own cache look it up by the key of
 * its bytes as sent (src/media/mediaKey.ts bytesKeyOf; a video's is main's hash of its source and sampling).
 * Budgets count its embeddings (numEmbeddings x the Thinker's width x 4 bytes).
 */
import type { ContentPart } from '../../common/engine.ts';
import type { EncoderSettings } from '../../common/encoderSettings.ts';
import type { MediaGrid, Modality } from '../../common/modality.ts';
import type { MediaBody, MediaFormat } from '../../common/payloads.ts';
import type { EncoderInput } from '../types.ts';
import type { InterleaveTiming } from '../video/interleave.ts';

export type PartOf<M extends Modality> = Extract<ContentPart, { readonly type: M }>;
export type MediaPart = PartOf<Modality>;

/** An item's place in the prompt, known before it is encoded. */
export interface ItemLayout {
  readonly numEmbeddings: number;
  /** Video: its time x height x width grid (placeholder expansion and positions carry it). */
  readonly grid?: MediaGrid;
  /**
   * Video heard with its audio track (use_audio_in_video): the track, an audio item of its own that follows the clip
   * and shares its placeholder, interleaved with it in time chunks (src/media/video/interleave.ts).
   */
  readonly audioTrack?: {
    readonly part: PartOf<'audio'>;
    /** Seconds between temporal groups: the temporal patch over the clip's effective rate. */
    readonly secondsPerGroup: number;
    readonly timing: InterleaveTiming;
  };
}

/** An item in its encoder stage: the key its rows are cached under, their count, and the encoder input. */
export interface PreparedItem {
  readonly key: string;
  readonly numEmbeddings: number;
  /** The encoder input (computed on first call: a cache hit never needs it). */
  input(): EncoderInput;
}

/**
 * A modality's placeholder token, spelled from its name (one rule for every modality): in a Hugging Face vocabulary
 * `<|AUDIO|>` (Qwen2.5-Omni), `<|audio_pad|>` (Qwen2-VL, Qwen2-Audio) or `<|audio|>`, tried in that order; in the byte
 * tokenizer of the generated models, `<|audio|>`.
 */
export function placeholderSpellings<M extends Modality>(name: M): { hf: readonly string[]; byte: `<|${M}|>` } {
  return { hf: [`<|${name.toUpperCase()}|>`, `<|${name}_pad|>`, `<|${name}|>`], byte: `<|${name}|>` };
}

export interface ModalityDef<M extends Modality> {
  readonly name: M;
  /** The encoder model family that reads it: an audio encoder, or a vision encoder (images and video share one). */
  readonly encoder: 'audio' | 'vision';
  /** The formats its chunks carry to its encoder (MediaBody.format). */
  readonly formats: readonly MediaFormat[];
  /**
   * The prefix cache names its positions by the item's block key and offset (true: video and images, whose rows are a
   * function of main's key: a request finds their KV at admission, before and without their encoder's round trip), or
   * by its rows (false: audio, whose clip that grew since the last prefill matches on the windows it shares).
   */
  readonly keyedBlocks: boolean;
  /** The engine-level shape check (validateRequest): what is wrong with the part, or null. */
  shapeProblem(part: PartOf<M>, at: string): string | null;
  /** Embeddings (and grid) from what main holds; throws CHORUS_ERR_MEDIA_INVALID naming `what`. */
  layout(part: PartOf<M>, settings: EncoderSettings, what: string): ItemLayout;
  /** The chunk that carries the item to its encoder. */
  body(part: PartOf<M>, item: number, what: string): MediaBody;
  /**
   * In its encoder stage: the body -> content key, count and input. Throws CHORUS_ERR_MEDIA_INVALID naming the item
   * when the bytes do not decode, or decode to another count than main's (the prompt would have the wrong span).
   */
  prepare(body: MediaBody, settings: EncoderSettings, encoderIdentity: string, cacheSalt?: string): PreparedItem;
}
