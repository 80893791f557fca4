/**
 * The data plane's vocabulary: what one chunk carries on each kind of edge. Producers build a ChunkBody, the
 * adapter turns it into frame metadata + raw tensors (transport/payloadCodec.ts) and back, checking every field and
 * shape on the way in, so a consumer narrows on `kind` and never casts. A final chunk may carry no body at all.
 *
 *   main      -> encoder   media         one media item's raw bytes (decoded in the encoder stage)
 *   encoder   -> thinker   encoderRows   that item's embeddings [numRows, width] (a clip's in pieces, in order), or
 *                                        why it could not be encoded
 *   thinker   -> talker    talkerRows    conditioning rows [numRows, conditionDim]; the first chunk says how many
 *                                        of its rows are prompt rows
 *   talker    -> code2wav  codecFrames   codes [numCodebooks, numFrames], the first contextFrames frames context only
 *   thinker   -> main      text          sampled token ids (+ warnings on the final chunk)
 *   code2wav  -> main      audio         mono PCM in [-1, 1]
 */
import type { SerializedError } from './errors.ts';

export type MediaFormat = 'wav' | 'pcm16' | 'image' | 'video';

/** A video's sampled frames as they travel to the video encoder: `bytes` holds numFrames RGB frames. */
export interface VideoFrames {
  readonly numFrames: number;
  readonly width: number;
  readonly height: number;
  /** Frames per second of video time the frames were sampled at (drives the time positions). */
  readonly fps: number;
  /** The source's content and its sampling, hashed by main (src/media/modalities/video.ts): the bytes key. */
  readonly sourceKey: string;
}

export interface MediaBody {
  readonly kind: 'media';
  /** Index of the item in the request's media plan. */
  readonly item: number;
  readonly format: MediaFormat;
  /** pcm16 only: the rate of the samples (the Realtime API's 24 kHz when absent). */
  readonly sampleRateHz?: number;
  /** video only: how to read `bytes`. */
  readonly video?: VideoFrames;
  /** Names the item in messages ("messages[0].content[1] (audio)"). */
  readonly what: string;
  readonly bytes: Uint8Array;
}

export type EncoderRowsBody =
  | {
      readonly kind: 'encoderRows';
      readonly item: number;
      /** numRows * width floats, row-major. */
      readonly rows: Float32Array;
      readonly numRows: number;
      readonly width: number;
      /**
       * The item's row these rows start at (absent: 0). A clip whose groups encode apart comes in pieces, each sent
       * as soon as it is encoded, in order (EncoderCore.ts): a chunk that ends before the item's last row is a piece,
       * and the Thinker prefills up to its end while the rest encodes.
       */
      readonly offset?: number;
      /**
       * The encoder's cache key of the item (decoded media + encoder identity): the EC store keeps rows under it. On
       * the piece that completes the item.
       */
      readonly contentKey?: string;
      readonly error?: undefined;
    }
  /** The encoder could not encode the item (bad media, a failed run): the Thinker applies on_encoder_failure. */
  | { readonly kind: 'encoderRows'; readonly item: number; readonly error: SerializedError; readonly rows?: undefined };

export interface TalkerRowsBody {
  readonly kind: 'talkerRows';
  /** numRows * conditionDim floats, row-major: [thinker embedding | accept hidden] per position. */
  readonly rows: Float32Array;
  readonly numRows: number;
  readonly conditionDim: number;
  /** First chunk only: how many of the request's rows are prompt rows. */
  readonly promptRows?: number;
  /**
   * First chunk only, from a Thinker with a prefix cache: the names of the prompt's whole blocks of `positions`
   * (src/sched/blockNames.ts). The rows are a function of what the names stand for, so a Talker names its own
   * blocks after them instead of hashing every row of the history again.
   */
  readonly promptBlocks?: PromptBlocks;
}

export interface PromptBlocks {
  readonly names: readonly string[];
  readonly positions: number;
}

export interface CodecFramesBody {
  readonly kind: 'codecFrames';
  /** numCodebooks * numFrames codes, layout [Q][T]. */
  readonly codes: Int32Array;
  readonly numCodebooks: number;
  readonly numFrames: number;
  /** The first contextFrames frames are left context already decoded in an earlier chunk. */
  readonly contextFrames: number;
}

/** One sampled token's log probability and the k most likely tokens' (stages/sampling/logprobs.ts). */
export interface TokenLogprobs {
  readonly logprob: number;
  readonly top: readonly { readonly id: number; readonly logprob: number }[];
}

export interface TextBody {
  readonly kind: 'text';
  readonly tokenIds: readonly number[];
  /** For a request that asked for logprobs: one per token id. */
  readonly logprobs?: readonly TokenLogprobs[];
  /** Final chunk only: what the answer left out (a media item dropped under on_encoder_failure: text_only). */
  readonly warnings?: readonly string[];
  /** Final chunk only: the media items (plan indices) cut out of the prompt, so usage does not count them. */
  readonly droppedItems?: readonly number[];
  /** Final chunk only: prompt positions taken from the prefix cache (usage's cached tokens). */
  readonly cachedTokens?: number;
}

export interface AudioBody {
  readonly kind: 'audio';
  /** Mono samples in [-1, 1]. */
  readonly pcm: Float32Array;
  readonly sampleRateHz: number;
}

export type ChunkBody = MediaBody | EncoderRowsBody | TalkerRowsBody | CodecFramesBody | TextBody | AudioBody;
export type ChunkBodyKind = ChunkBody['kind'];
export type BodyOf<K extends ChunkBodyKind> = Extract<ChunkBody, { readonly kind: K }>;
