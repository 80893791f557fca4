/**
 * session.truncation (OpenAI Realtime GA): which conversation items a response leaves out so that its prompt and its
 * answer fit the Thinker's positions. Pure: the items with the positions each takes in the prompt, the positions of
 * the instructions (with the chat template's fixed part), the Thinker's positions and the answer's cap in; the items
 * to drop, oldest first, or why nothing can fit, out. SessionResponses applies a plan (the items are forgotten as
 * conversation.item.delete forgets them); the voice prefill and a held answer plan the same way without applying it,
 * so the prompts they compute are the answer's.
 *
 * - retention_ratio r: once the conversation is over the limit, drop the oldest items until r of the allowed
 *   positions are used: one large step, so truncations are rare and the turns after one share a long prefix again
 *   (what a prefix cache serves); token_limits.post_instructions lowers the limit.
 * - "auto" (the default): retention_ratio AUTO_RETENTION_RATIO. Dropping only what the turn needs would drop an item
 *   or two on every turn past the limit, changing the prompt's first item each time, so the prefix cache would never
 *   hit again and each turn would prefill the whole conversation (seconds, where a cached turn takes milliseconds).
 *   And its items may fill at most `autoPositions` (YAML realtime.auto_truncation_positions), counted as
 *   token_limits.post_instructions counts them: every step of an answer attends over the whole context, so a
 *   conversation allowed to fill a large model keeps getting slower turn after turn; bounded, its turns stay as fast
 *   as its first ones (issue 41). An item the window cannot hold still gets the model's whole context.
 * - "disabled": nothing is dropped; a conversation over the limit fails its response, naming the fix.
 *
 * Never dropped: the instructions (they are not an item), and the newest item that takes any positions (the turn
 * being answered: without it the answer would be to something else).
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';

export type TruncationSetting =
  | 'auto'
  | 'disabled'
  | {
      readonly type: 'retention_ratio';
      /** In (0, 1]: the share of the allowed positions kept after a truncation. */
      readonly retention_ratio: number;
      readonly token_limits?: { readonly post_instructions?: number };
    };

export interface PositionedItem {
  readonly id: string;
  /** Thinker positions the item takes in the prompt (text tokens, media embeddings, its turn markers). */
  readonly positions: number;
}

export interface TruncationInput {
  /** In conversation order, oldest first. */
  readonly items: readonly PositionedItem[];
  /** The prompt without any item: the instructions, the chat template's fixed part, the answer's header. */
  readonly instructionsPositions: number;
  /** The Thinker's positions (its model's max_positions). */
  readonly maxPositions: number;
  /** The answer's token cap (max_output_tokens, or the stage's max_tokens). */
  readonly answerPositions: number;
  readonly setting: TruncationSetting;
  /** "auto": the positions the items may fill at most (as token_limits.post_instructions); absent: no bound. */
  readonly autoPositions?: number;
}

/** What the limit on the conversation's positions is made of (every figure an error message names). */
export interface TruncationLimit {
  /** Positions the conversation's items may take: the smaller of `byModel` and post_instructions. */
  readonly allowed: number;
  /** maxPositions - reserved - instructionsPositions. */
  readonly byModel: number;
  /** Positions kept free for the answer. */
  readonly reserved: number;
  /** What the items take now. */
  readonly conversation: number;
}

export type TruncationPlan =
  | {
      readonly fits: true;
      /** Item ids to leave out, oldest first (empty: the conversation fits as it is). */
      readonly drop: readonly string[];
      /** Positions the kept items take. */
      readonly keptPositions: number;
      readonly limit: TruncationLimit;
    }
  | {
      readonly fits: false;
      /** disabled: over the limit with truncation off; instructions: they alone leave no room; newest_item: too big. */
      readonly reason: 'disabled' | 'instructions' | 'newest_item';
      /** The newest item that takes positions (newest_item). */
      readonly newest: PositionedItem | null;
      readonly limit: TruncationLimit;
    };

/**
 * The answer's cap, at most half the positions: a cap as large as the context (the stage's max_tokens on a config
 * whose max_tokens >= max_positions, or a client's max_output_tokens near it) would otherwise leave no room for any
 * prompt. A longer answer is cut by the Thinker at the positions left (finish reason length), as it always was.
 */
export function reservedForAnswer(answerPositions: number, maxPositions: number): number {
  return Math.max(1, Math.min(answerPositions, Math.floor(maxPositions / 2)));
}

/**
 * The share of the allowed positions "auto" keeps when it truncates: the turns after a truncation append to a prefix
 * the cache holds for (1 - r) of the limit; a smaller r truncates less often but forgets more at once. At 0.5 a
 * truncation's prefill (r of the limit, uncached) is no more than what the turns until the next one append.
 */
export const AUTO_RETENTION_RATIO = 0.5;

export function planTruncation(input: TruncationInput): TruncationPlan {
  if (input.setting === 'auto' && input.autoPositions !== undefined) {
    const bounded = planWithin(input, input.autoPositions);
    if (bounded.fits) return bounded;
    // The newest item alone is over the window: it still gets the model's whole context.
  }
  return planWithin(input, undefined);
}

function planWithin(input: TruncationInput, autoWindow: number | undefined): TruncationPlan {
  const { items, setting } = input;
  const reserved = reservedForAnswer(input.answerPositions, input.maxPositions);
  const byModel = input.maxPositions - reserved - input.instructionsPositions;
  const postInstructions = typeof setting === 'object' ? setting.token_limits?.post_instructions : autoWindow;
  const allowed = postInstructions === undefined ? byModel : Math.min(postInstructions, byModel);
  const conversation = items.reduce((n, it) => n + it.positions, 0);
  const limit: TruncationLimit = { allowed, byModel, reserved, conversation };

  // 1. Fits as it is: nothing to do (the common case, every turn until the first truncation).
  if (conversation <= allowed) return { fits: true, drop: [], keptPositions: conversation, limit };
  // 2. Over the limit with truncation off: the client decides what goes.
  if (setting === 'disabled') return { fits: false, reason: 'disabled', newest: null, limit };
  // 3. The instructions alone fill what the answer leaves: no item can be kept.
  if (allowed <= 0) return { fits: false, reason: 'instructions', newest: null, limit };
  // 4. The turn being answered is never dropped: if it alone is over the limit, no plan fits.
  let newestAt = items.length - 1;
  while (newestAt > 0 && items[newestAt].positions === 0) newestAt--;
  const newest = items[newestAt];
  if (newest.positions > allowed) return { fits: false, reason: 'newest_item', newest, limit };
  // 5. Drop the oldest items until the rest is at r of the limit: one large step, then many turns that only append.
  const ratio = setting === 'auto' ? AUTO_RETENTION_RATIO : setting.retention_ratio;
  const target = Math.floor(ratio * allowed);
  const drop: string[] = [];
  let kept = conversation;
  for (let i = 0; i < newestAt && kept > target; i++) {
    drop.push(items[i].id);
    kept -= items[i].positions;
  }
  return { fits: true, drop, keptPositions: kept, limit };
}

/**
 * The error a response that cannot fit fails with: OpenAI's context_length_exceeded, an invalid_request_error (the
 * client can fix it), naming the limit, what fills it, and the fix. `responseInput`: the items were the response's
 * own (response.input), which are planned as "disabled" (sent whole or refused: not the conversation's to forget).
 */
export function truncationError(
  plan: Extract<TruncationPlan, { fits: false }>,
  input: Pick<TruncationInput, 'maxPositions' | 'instructionsPositions'>,
  responseInput = false,
): ChorusError {
  const { limit } = plan;
  const room =
    `the thinker's ${input.maxPositions} positions, less ${limit.reserved} kept for the answer ` +
    `(max_output_tokens) and ${input.instructionsPositions} for the instructions and the chat template`;
  const capped = limit.allowed < limit.byModel ? ` (session.truncation.token_limits.post_instructions)` : '';
  switch (plan.reason) {
    case 'disabled':
      if (responseInput)
        return new ChorusError(
          ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
          `response.input takes ${limit.conversation} positions, over the ${limit.allowed} it may use: ${room}. ` +
            `Items given in response.input are never truncated: send fewer or shorter ones, or lower ` +
            `max_output_tokens`,
        );
      return new ChorusError(
        ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
        `the conversation takes ${limit.conversation} positions, over the ${limit.allowed} it may use${capped}: ` +
          `${room}. session.truncation is "disabled", so nothing is dropped: delete older items ` +
          `(conversation.item.delete), lower max_output_tokens, or set session.truncation to "auto"`,
      );
    case 'instructions':
      return new ChorusError(
        ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
        `the instructions take ${input.instructionsPositions} positions, which with ${limit.reserved} kept for ` +
          `the answer (max_output_tokens) leave no room for the conversation in the thinker's ` +
          `${input.maxPositions}: shorten the instructions or lower max_output_tokens`,
      );
    case 'newest_item':
      return new ChorusError(
        ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
        `item ${plan.newest!.id} alone takes ${plan.newest!.positions} positions, over the ${limit.allowed} the ` +
          `conversation may use${capped} (${room}): send it shorter (less audio, fewer images), lower ` +
          `max_output_tokens, or delete it (conversation.item.delete)`,
      );
  }
}
