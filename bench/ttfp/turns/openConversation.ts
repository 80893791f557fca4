/** A conversation of `chorus bench --turns` over the protocol asked for (the implementations import the interface). */
import type { ClientTarget, Protocol } from '../clients/BenchClient.ts';
import { ChatConversation } from './ChatConversation.ts';
import type { ConversationClient } from './ConversationClient.ts';
import { RealtimeConversation } from './RealtimeConversation.ts';

export async function openConversation(protocol: Protocol, target: ClientTarget): Promise<ConversationClient> {
  return protocol === 'realtime' ? RealtimeConversation.connect(target) : new ChatConversation(target);
}
