/**
 * What an item from conversation.item.create must pass before it joins the conversation: a call's output answers a
 * call in it; an item whose text alone cannot fit a prompt could never be answered; and the rest count against the
 * session's text budget (textBudget.ts).
 */
import type { TokenLimits } from '../generationParams.ts';
import { refuseLongText } from '../promptText.ts';
import type { StoredItem } from './Conversation.ts';
import { checkCallAnswered } from './realtimeTools.ts';
import { checkTextBudget, itemTextBytes } from './textBudget.ts';

export function checkNewItem(
  item: StoredItem,
  items: readonly StoredItem[],
  limits: { readonly tokenLimits: TokenLimits; readonly maxTextBytes: number },
): void {
  if (item.call?.type === 'function_call_output') {
    const callIds = items.flatMap((it) => (it.call?.type === 'function_call' ? [it.call.callId] : []));
    checkCallAnswered(callIds, item.call.callId);
  }
  refuseLongText(itemTextBytes(item), limits.tokenLimits, {
    what: "the item's text",
    param: 'item',
    fix: 'split it, or send less text',
  });
  checkTextBudget(items, item, limits.maxTextBytes);
}
