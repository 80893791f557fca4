/**
 * The Thinker stage: continuous batching over a ThinkerRunner. Emits text token ids to main every step (text
 * streams to clients whatever async_chunk says) and conditioning rows to the Talker through Thinker2Talker.
 */
import type { ScheduledItem } from '../../sched/ArScheduler.ts';
import type { ThinkerBatchItem, ThinkerRunner, ThinkerStepOutput } from '../../../stages/types.ts';
import { Thinker2Talker } from '../../../stages/processors/thinker2talker.ts';
import type { FinishReason } from '../../engine/types.ts';
import { ChorusError, ErrorCodes } from '../../errors.ts';
import type { AddRequest } from '../messages.ts';
import type { CoreRequest, StageContext } from '../StageCore.ts';
import { ArStageCore } from './ArStageCore.ts';

interface ThinkerRequest extends CoreRequest {
  readonly promptTokenIds: readonly number[];
  readonly generated: number[];
  readonly toTalker: Thinker2Talker | null;
}

export class ThinkerCore extends ArStageCore<ThinkerRequest, ThinkerBatchItem, ThinkerStepOutput> {
  constructor(ctx: StageContext, private readonly runner: ThinkerRunner, kvBytesPerToken: number) {
    super(ctx, runner, kvBytesPerToken);
  }

  protected admit(msg: AddRequest): ThinkerRequest {
    const prompt = msg.promptTokenIds ?? [];
    if (prompt.length === 0) throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request ${msg.requestId} has an empty prompt`);
    const needsTalker = msg.downstream.some((t) => t.stageId !== 'main');
    const supports = this.runner.supports;
    if (needsTalker && supports && (!supports.hiddenStates || !supports.embeddings)) {
      throw new ChorusError(
        ErrorCodes.MODEL_SIGNATURE,
        `the thinker model of stage ${this.ctx.spec.stageId} exports no hidden states, which audio output needs: request text only, or export the model with hidden states`,
      );
    }
    const maxPositions = this.maxPositions();
    if (prompt.length >= maxPositions) {
      throw new ChorusError(ErrorCodes.REQUEST_TOO_LARGE, `prompt of ${prompt.length} tokens does not fit the thinker's ${maxPositions} positions: shorten it`);
    }
    this.scheduler.add(msg.requestId, prompt.length);
    // The answer may not run past the model's positions: cap max_tokens instead of failing mid-answer.
    const sampling = { ...msg.sampling, maxTokens: Math.min(msg.sampling.maxTokens, maxPositions - prompt.length) };
    return {
      requestId: msg.requestId,
      sampling,
      downstream: msg.downstream,
      numOutputs: 0,
      promptTokenIds: prompt,
      generated: [],
      toTalker: needsTalker ? new Thinker2Talker(this.runner.hiddenSize, prompt.length, this.ctx.asyncChunk) : null,
    };
  }

  private maxPositions(): number {
    const m = this.ctx.spec.model;
    return m.source === 'generated' && m.kind === 'thinker' ? m.size.maxPositions : Number.MAX_SAFE_INTEGER;
  }

  protected onChunk(): void {
    // The Thinker is the entry stage: its input comes with `add`, never as chunks (encoders: see encoder2thinker).
  }

  protected batchItem(req: ThinkerRequest, item: ScheduledItem): ThinkerBatchItem {
    const all = req.promptTokenIds.length;
    const tokenIds: number[] = [];
    for (let p = item.startPosition; p < item.startPosition + item.numTokens; p++) {
      tokenIds.push(p < all ? req.promptTokenIds[p] : req.generated[p - all]);
    }
    return { seqId: req.requestId, tokenIds, numTokens: item.numTokens, sample: item.sample, sampling: req.sampling };
  }

  protected afterStep(req: ThinkerRequest, item: ScheduledItem, out: ThinkerStepOutput): void {
    const token = item.sample ? out.tokenId : null;
    const stop = token !== null ? this.stopReason(req, token) : null;
    const emitsToken = token !== null && !(stop === 'stop' && this.isStopToken(req, token));
    if (emitsToken) {
      req.generated.push(token);
      req.numOutputs++;
      this.scheduler.setAvailable(req.requestId, req.promptTokenIds.length + req.generated.length);
    }
    req.toTalker?.onStep(item.startPosition, item.numTokens, out.embeds, out.hidden, emitsToken ? this.runner.embed([token]) : null);
    const main = req.downstream.filter((t) => t.stageId === 'main');
    const talker = req.downstream.filter((t) => t.stageId !== 'main');
    if (stop) {
      this.finish(req, stop, (t) => {
        if (t.stageId === 'main') return { payload: { tokenIds: emitsToken ? [token] : [] } };
        return rowsChunk(req.toTalker!.take(true));
      });
      return;
    }
    if (emitsToken) this.send(req, main, { payload: { tokenIds: [token] } });
    const rows = req.toTalker?.take(false);
    if (rows) this.send(req, talker, rowsChunk(rows));
  }

  private isStopToken(req: ThinkerRequest, token: number): boolean {
    return (!req.sampling.ignoreEos && token === this.runner.eosTokenId) || req.sampling.stopTokenIds.includes(token);
  }

  private stopReason(req: ThinkerRequest, token: number): FinishReason | null {
    if (this.isStopToken(req, token)) return 'stop';
    if (req.generated.length + 1 >= req.sampling.maxTokens) return 'length';
    return null;
  }
}

function rowsChunk(rows: ReturnType<Thinker2Talker['take']>) {
  if (!rows || rows.numRows === 0) return {};
  return {
    payload: rows.promptRows !== undefined ? { promptRows: rows.promptRows } : {},
    tensors: { rows: { data: rows.rows, shape: [rows.numRows, rows.rows.length / rows.numRows] } },
  };
}
