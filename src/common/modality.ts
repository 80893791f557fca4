/**
 * The media a request may carry. Each is defined once, in src/media/modalities/<name>.ts (how its content part is
 * parsed, prepared, keyed, counted, encoded and laid out); this floor type only names them, so the stage graph, the
 * engine's content parts and the data plane's bodies can speak of a modality without importing its code.
 */
import { Type } from '@sinclair/typebox';

export type Modality = 'audio' | 'image' | 'video';

export const MODALITIES = ['audio', 'image', 'video'] as const satisfies readonly Modality[];

/** The value check of a modality in a message that crosses a process boundary. */
export const ModalitySchema = Type.Union(MODALITIES.map((m) => Type.Literal(m)));

/** A video item's grid after patching: temporal groups x merged rows x merged columns (= its embeddings). */
export interface MediaGrid {
  readonly t: number;
  readonly h: number;
  readonly w: number;
}
