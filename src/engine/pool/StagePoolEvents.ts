/** What the stage pool tells the request side: the pool never reaches a request, it says what happened. */
import type { SerializedError } from '../../common/errors.ts';
import type { ModelFacts } from '../../common/modelFacts.ts';
import type { StageToMain } from '../../worker/messages.ts';
import type { InstanceView } from './StageInstance.ts';

export type FinishedMessage = Extract<StageToMain, { type: 'finished' }>;
export type EcStoredMessage = Extract<StageToMain, { type: 'ec_stored' }>;
export type MediaReleasedMessage = Extract<StageToMain, { type: 'media_released' }>;
export type MediaRetryMessage = Extract<StageToMain, { type: 'media_retry' }>;

export interface StagePoolEvents {
  /** An instance is READY (boot, restart or remote join), with the model facts it reported. */
  ready: [instance: InstanceView, facts: ModelFacts | undefined];
  /** An instance's stats report arrived (InstanceView.stats is it now). */
  stats: [instance: InstanceView];
  /** A request finished on an instance (it has left the instance's in-flight set). */
  finished: [instance: InstanceView, msg: FinishedMessage];
  /** A Thinker instance kept an item's encoder rows. */
  ecStored: [instance: string, msg: EcStoredMessage];
  /** A Thinker instance let go of a request's media rows once prefilled. */
  mediaReleased: [instance: string, msg: MediaReleasedMessage];
  /** A Thinker instance asks for an item to be encoded again (its encode failed for memory or time, or was lost). */
  mediaRetry: [instance: string, msg: MediaRetryMessage];
  /** The instance died or was lost with its process state: its requests in flight failed with `error`. */
  lost: [instance: InstanceView, requestIds: readonly string[], error: SerializedError];
  /** The instance was declared hung (it is being killed): its requests in flight failed with `error`. */
  hung: [instance: InstanceView, requestIds: readonly string[], error: SerializedError];
}
