/** A conversation of `chorus bench --turns` over the protocol asked for (the implementations import the interface). */
import type { ClientTarget, Protocol } from '../clients/BenchClient.ts';
import { ChatConversation } from './ChatConversation.ts';
import type { ConversationClient } from './ConversationClient.ts';
import { RealtimeConversation } from './RealtimeConversation.ts';

/** `system`: the instructions every turn is answered under (a system message; a Realtime session's instructions). */
export async function openConversation(
  protocol: Protocol,
  target: ClientTarget,
  system: string | null = null,
): Promise<ConversationClient> {
  return protocol === 'realtime' ? RealtimeConversation.connect(target, system) : new ChatConversation(target, system);
}
