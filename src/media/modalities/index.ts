/**
 * The modalities, one line each: a new one is its own file implementing ModalityDef and a line here (its name in
 * src/common/modality.ts, its encoder's model in stages/). Nothing else dispatches on a modality's name.
 */
import type { Modality } from '../../common/modality.ts';
import type { MediaBody } from '../../common/payloads.ts';
import type { EncoderSettings } from '../../common/encoderSettings.ts';
import { mediaInvalid } from '../mediaError.ts';
import { audio } from './audio.ts';
import { image } from './image.ts';
import type { MediaPart, ModalityDef } from './ModalityDef.ts';
import { video } from './video.ts';

export const modalities: { readonly [M in Modality]: ModalityDef<M> } = { audio, image, video };

/** The modality whose encoder a chunk of this format goes to. */
export function modalityOfBody(body: MediaBody): ModalityDef<Modality> {
  const def = Object.values(modalities).find((m) => m.formats.includes(body.format));
  if (!def) throw mediaInvalid(body.what, `media of format ${String(body.format)} belongs to no modality`);
  return def as unknown as ModalityDef<Modality>;
}

/**
 * The modalities an encoder stage takes: its own, and video too when it is an image encoder with `video:` settings
 * (the image encoder serves video, docs/video.md).
 */
export function modalitiesServed(settings: Pick<EncoderSettings, 'modality' | 'video'>): Modality[] {
  return settings.modality === 'image' && settings.video ? ['image', 'video'] : [settings.modality];
}

export function isMediaModality(type: string): type is Modality {
  return Object.hasOwn(modalities, type);
}

/** The definition of a part's modality, typed for that part. */
export function modalityOf(part: MediaPart): ModalityDef<Modality> {
  return modalities[part.type] as unknown as ModalityDef<Modality>;
}

export type { ItemLayout, MediaPart, ModalityDef, PartOf, PreparedItem } from './ModalityDef.ts';
export { placeholderSpellings } from './ModalityDef.ts';
export { MODALITIES, type Modality } from '../../common/modality.ts';
