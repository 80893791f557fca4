/**
 * Main's side of an item encoded again (issue 44 item 7; the decision: reencode.ts). A Thinker asks (`media_retry`)
 * when an item's encode failed for memory or time, its encoder-output store entry was lost, or its encode was skipped
 * for KV the Thinker did not hold after all; it waits at the item. Main then runs the request again under its next run
 * id (the failed run's stages drop it: abort), with the clip one step down its fallback, for a lost entry with the
 * entry forgotten so the item goes to an encoder with the bytes main holds, for a wrong skip with every item encoded;
 * or it answers the Thinker that the item failed for good (`media_failed` with the item: its failure policy applies,
 * and the message says why it was not encoded again and what to do). Never a hang: every ask is answered, and a
 * request runs at most MAX_REENCODES times.
 *
 * A clip served with fewer or smaller frames is said in the answer's warnings (one per clip, for its last step), as
 * the planned fallback's clips are.
 */
import { diagnostics } from '../../common/diagnostics.ts';
import { serializeError, type SerializedError } from '../../common/errors.ts';
import { ErrorCodes } from '../../common/errors.ts';
import type { ChatMessage } from '../../common/engine.ts';
import type { Logger } from '../../common/log.ts';
import { mediaFailedMessage } from '../../../stages/requestEvents.ts';
import type { FallbackStep } from '../../media/video/videoFallback.ts';
import type { FitPolicy } from '../fitPrompt.ts';
import type { StagePool } from '../pool/StagePool.ts';
import type { MediaRetryMessage } from '../pool/StagePoolEvents.ts';
import { reencodeDecision, reencodeReason, reencodeWarning } from './reencode.ts';
import type { RequestRecord } from './RequestRecord.ts';
import type { RequestRegistry } from './RequestRegistry.ts';

export interface ReencodesContext {
  readonly pool: StagePool;
  readonly requests: RequestRegistry;
  readonly log: Logger;
  readonly policy: () => FitPolicy;
  /** The item's encoder-output store entry had no rows: forget it. */
  readonly forgetLost: (record: RequestRecord, item: number) => void;
  /** Plans and commits the record's next run from `messages`; throws when it cannot be admitted now. */
  readonly runAgain: (record: RequestRecord, messages: readonly ChatMessage[]) => void;
}

export class Reencodes {
  /** Per request, each re-encoded clip's frames as first served and its warning now (replaced at each step). */
  readonly #clips = new WeakMap<RequestRecord, Map<string, { first: FallbackStep; warning: string | null }>>();

  constructor(private readonly ctx: ReencodesContext) {}

  onRetry(instance: string, msg: MediaRetryMessage): void {
    const record = this.ctx.requests.ofRun(msg.requestId);
    if (!record || record.stream.finished || record.migrating) return; // its run is over: nobody waits
    const item = record.prompt.items[msg.item];
    const failItem = (error: SerializedError) =>
      this.ctx.pool.send(instance, mediaFailedMessage(msg.requestId, instance, error, msg.item));
    if (!item) return failItem(msg.error);
    const delivered = record.stream.delivered;
    if (delivered.tokens > 0 || delivered.samples > 0) return failItem(msg.error); // its answer went on without it
    const { fallback, cell } = this.ctx.policy();
    const decision = reencodeDecision({
      messages: record.messages,
      item,
      error: msg.error,
      fallback,
      cell,
      reencodes: record.reencodes,
    });
    const facts = { requestId: record.requestId, item: item.what, code: msg.error.code };
    if (decision.kind === 'fail') {
      this.ctx.log.warn({ ...facts, why: decision.error.message }, 'media item not encoded again');
      return failItem(decision.error);
    }
    if (msg.error.code === ErrorCodes.EC_ENTRY_LOST) this.ctx.forgetLost(record, msg.item);
    if (msg.error.code === ErrorCodes.KV_NOT_HELD) record.skipHeld = false; // the index was wrong: encode them all
    try {
      this.ctx.runAgain(record, decision.messages);
    } catch (err) {
      const why = serializeError(err).message;
      this.ctx.log.warn({ ...facts, why }, 'media item not encoded again: its new run was not admitted');
      return failItem({ code: msg.error.code, message: `${msg.error.message} (not encoded again: ${why})` });
    }
    this.ctx.log.info({ ...facts, run: record.runId, stepped: decision.stepped }, 'media item encoded again');
    diagnostics.mediaReencode.publish({ reason: reencodeReason(msg.error.code), modality: item.modality });
    if (decision.stepped) this.#warn(record, item.what, decision.stepped, msg.error);
  }

  #warn(
    record: RequestRecord,
    what: string,
    stepped: { readonly from: FallbackStep; readonly to: FallbackStep },
    error: SerializedError,
  ): void {
    let clips = this.#clips.get(record);
    if (!clips) this.#clips.set(record, (clips = new Map()));
    const clip = clips.get(what) ?? { first: stepped.from, warning: null };
    if (clip.warning !== null) record.stream.removeWarning(clip.warning);
    clip.warning = reencodeWarning(what, clip.first, stepped.to, error);
    clips.set(what, clip);
    record.stream.addWarnings([clip.warning]);
  }
}
