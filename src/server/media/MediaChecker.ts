/**
 * Checks a media item against the pipeline the way the engine will at admission (an encoder for its modality,
 * then its modality's layout: a header's format, length, image size), from headers alone, in microseconds. Realtime
 * runs it when an item is created, so bad media is refused with an error event at once and never enters the
 * conversation, where it would fail every later response.create. A pipeline whose Thinker hears text only but that
 * has a speech-to-text model (YAML `asr:`) takes audio too: it is heard as its transcript (`heard`, docs/voice.md).
 */
import { encodersOf, type StageGraph } from '../../common/graph.ts';
import type { EncoderSettings, MediaModality } from '../../common/encoderSettings.ts';
import { mediaInvalid } from '../../media/mediaError.ts';
import { modalityOf, type MediaPart } from '../../media/modalities/index.ts';
import { probeAudio } from '../../media/probeMedia.ts';

export class MediaChecker {
  readonly #encoders: ReadonlyMap<MediaModality, EncoderSettings>;
  /** No audio encoder, but speech-to-text: audio goes to the Thinker as its transcript. */
  readonly #hearsSpeech: boolean;

  constructor(graph: StageGraph) {
    this.#encoders = new Map(
      [...encodersOf(graph)].flatMap(([modality, spec]) => (spec.encoder ? [[modality, spec.encoder] as const] : [])),
    );
    this.#hearsSpeech = !this.#encoders.has('audio') && (graph.asr ?? null) !== null;
  }

  /** True when audio reaches the Thinker as its transcript (the pipeline's speech-to-text), not as audio. */
  heard(modality: MediaModality): boolean {
    return modality === 'audio' && this.#hearsSpeech;
  }

  /** True when the pipeline takes the modality: an encoder stage for it, or audio heard through speech-to-text. */
  accepts(modality: MediaModality): boolean {
    return this.#encoders.has(modality) || this.heard(modality);
  }

  /** Throws CHORUS_ERR_MEDIA_INVALID naming `what` when the engine would refuse the item. */
  check(part: MediaPart, what: string): void {
    if (part.type === 'audio' && this.#hearsSpeech) {
      probeAudio(part.data, part.format, { pcm16RateHz: part.sampleRateHz, what }); // Whisper reads any length
      return;
    }
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
