/** A request's media items as the EC store sees them: looked up by the hash of their bytes as received. */
import type { MediaModality } from '../../common/graph.ts';
import { bytesKeyOf } from '../../kinds/encoder/encoderInputs.ts';
import type { EcItemPlan } from '../../worker/messages.ts';
import { mediaBodyOf } from '../MediaRoutes.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import type { EcItemQuery, EcStore } from './EcStore.ts';

/** Each item's store query (sha256 of its bytes: ~1 ms per MB on main, once per request). */
export function ecQueriesOf(prompt: PreparedPrompt): EcItemQuery[] {
  return prompt.items.map((item) => ({
    index: item.index,
    bytesKey: bytesKeyOf(mediaBodyOf(item)),
    encoderStageId: item.encoder.stageId,
  }));
}

/** The store's plan for the request's items on its Thinker instance; undefined without a store or media. */
export function planEcItems(
  ec: EcStore | null,
  requestId: string,
  prompt: PreparedPrompt,
  thinker: string,
): ReadonlyMap<number, EcItemPlan> | undefined {
  if (!ec || prompt.items.length === 0) return undefined;
  return ec.plan(requestId, ecQueriesOf(prompt), thinker);
}

/** The modalities some encoder still has to encode (items the store has need none). */
export function modalitiesToEncode(
  prompt: PreparedPrompt,
  ec: ReadonlyMap<number, EcItemPlan> | undefined,
): MediaModality[] {
  return [...new Set(prompt.items.filter((i) => ec?.get(i.index)?.contentKey === undefined).map((i) => i.modality))];
}
