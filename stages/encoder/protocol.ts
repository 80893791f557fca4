/** An encoder's own part of the stage protocol: its `add` arguments and its stats section. */
import { Type, type Static } from '@sinclair/typebox';
import { ModalitySchema } from '../../src/common/modality.ts';
import { PositiveCount, ShortText } from '../../src/common/wireValues.ts';
import { kindFactsSchema } from '../../src/common/modelFacts.ts';
import type { EncodeItem } from '../../src/worker/messages.ts';
import { kindSectionOf, type KindSection } from '../kindStats.ts';

export interface EncoderArgs {
  /** The items of this request it encodes (their bytes follow as `media` chunks from main). */
  readonly encode: readonly EncodeItem[];
}

/** The encoder output cache and the encoder runs, cumulative since the process started. */
export interface EncoderStats {
  readonly cacheHits: number;
  readonly cacheMisses: number;
  readonly cacheEvictions: number;
  /** Bytes held now (ready rows and pending reservations), of which pinned by running requests. */
  readonly cacheBytes: number;
  readonly cachePinnedBytes: number;
  readonly cacheEntries: number;
  readonly cacheBudgetBytes: number;
  /** Encoder runs (batches) and the items they encoded. */
  readonly runs: number;
  readonly itemsEncoded: number;
  /** Runs split into runs of one item: over the memory cap together (encoder.max_encode_bytes), or not allocated. */
  readonly runsSplit?: number;
  /** Items whose bytes had been seen: their content key came without decoding them again. */
  readonly decodesSkipped: number;
  /** Items waiting to be encoded now. */
  readonly queuedItems: number;
  /** Media items that reached this instance, and their bytes (an EC-store hit sends none). */
  readonly mediaItemsReceived: number;
  readonly mediaBytesReceived: number;
  /** A windowed audio encoder: windows served from its window cache, and windows encoded. */
  readonly windowHits?: number;
  readonly windowsEncoded?: number;
}

export type EncoderKindStats = KindSection<'encoder', EncoderStats>;

export const encoderStatsOf = kindSectionOf<EncoderKindStats>();

/** What a loaded encoder model is, as its stage reports it in READY (the envelope: src/common/modelFacts.ts). */
export const EncoderFactsSchema = kindFactsSchema('encoder', {
  modality: ModalitySchema,
  /** Width of one row (the Thinker's hidden size). */
  outputSize: PositiveCount,
  /** The encoder's identity in cache keys (model hash, preprocessing version, width). */
  identity: ShortText,
  /** Vision encoders: how images are cut. */
  patchSize: Type.Optional(PositiveCount),
  mergeSize: Type.Optional(PositiveCount),
});
export type EncoderFacts = Static<typeof EncoderFactsSchema>;
