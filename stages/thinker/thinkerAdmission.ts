/**
 * What a Thinker refuses at a request's add, before anything is scheduled: an empty prompt, a prompt past the model's
 * positions, audio out of a model without hidden states, media for a model without inputs_embeds. Each error says
 * what to change.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ThinkerRunner } from '../types.ts';

export interface ThinkerAdd {
  readonly requestId: string;
  readonly stageId: string;
  readonly promptLength: number;
  /** The request feeds a Talker (audio out): the model must export hidden states and embeddings. */
  readonly needsTalker: boolean;
  readonly hasMedia: boolean;
  readonly maxPositions: number;
}

export function refuseThinkerAdd(add: ThinkerAdd, supports: ThinkerRunner['supports']): void {
  if (add.promptLength === 0)
    throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request ${add.requestId} has an empty prompt`);
  if (add.needsTalker && supports && (!supports.hiddenStates || !supports.embeddings)) {
    throw new ChorusError(
      ErrorCodes.MODEL_SIGNATURE,
      `the thinker model of stage ${add.stageId} exports no hidden states, which audio output needs: ` +
        `request text only, or export the model with hidden states`,
    );
  }
  if (add.promptLength >= add.maxPositions) {
    throw new ChorusError(
      ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
      `prompt of ${add.promptLength} tokens does not fit the thinker's ${add.maxPositions} positions: shorten it`,
    );
  }
  if (add.hasMedia && supports && !supports.inputsEmbeds) {
    throw new ChorusError(
      ErrorCodes.MODEL_SIGNATURE,
      `the thinker model of stage ${add.stageId} takes input_ids only, so it cannot take media: export it with ` +
        `inputs_embeds, or send text`,
    );
  }
}
