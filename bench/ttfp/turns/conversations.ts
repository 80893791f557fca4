/**
 * The user messages of `chorus bench --turns`: `conversations` conversations of `turns` seeded messages each, every
 * message a different draw of inputLen single-token words (bench/ttfp/prompts.ts), so no two conversations share
 * more than the chat template's opening and every turn adds new text.
 */
import type { Tokenizer } from '../../../src/index.ts';
import { makePrompts } from '../prompts.ts';

export interface ConversationOptions {
  readonly tokenizer: Tokenizer;
  readonly conversations: number;
  readonly turns: number;
  readonly inputLen: number;
  readonly seed: number;
}

/** [conversation][turn] user messages; conversation i is the same for any count above i. */
export function makeConversations(o: ConversationOptions): string[][] {
  const messages = makePrompts({
    tokenizer: o.tokenizer,
    count: o.conversations * o.turns,
    inputLen: o.inputLen,
    seed: o.seed,
  });
  return Array.from({ length: o.conversations }, (_, i) => messages.slice(i * o.turns, (i + 1) * o.turns));
}
