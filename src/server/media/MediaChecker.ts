/**
 * Checks a media item against the pipeline the way the engine will at admission (an encoder for its modality,
 * then its modality's layout: a header's format, length, image size), from headers alone, in microseconds. Realtime
 * runs it when an item is created, so bad media is refused with an error event at once and never enters the
 * conversation, where it would fail every later response.create.
 */
import { encodersOf, type EncoderSettings, type MediaModality, type StageGraph } from '../../common/graph.ts';
import { mediaInvalid } from '../../media/mediaError.ts';
import { modalityOf, type MediaPart } from '../../media/modalities/index.ts';

export class MediaChecker {
  readonly #encoders: ReadonlyMap<MediaModality, EncoderSettings>;

  constructor(graph: StageGraph) {
    this.#encoders = new Map(
      [...encodersOf(graph)].flatMap(([modality, spec]) => (spec.encoder ? [[modality, spec.encoder] as const] : [])),
    );
  }

  /** True when the pipeline has an encoder stage for the modality. */
  accepts(modality: MediaModality): boolean {
    return this.#encoders.has(modality);
  }

  /** Throws CHORUS_ERR_MEDIA_INVALID naming `what` when the engine would refuse the item. */
  check(part: MediaPart, what: string): void {
    const settings = this.#encoders.get(part.type);
    if (!settings) {
      throw mediaInvalid(
        what,
        `this pipeline has no ${part.type} encoder, so ${part.type} input cannot be used (serve a config with one, ` +
          `e.g. configs/tiny-omni.yaml)`,
      );
    }
    modalityOf(part).layout(part, settings, what);
  }
}
