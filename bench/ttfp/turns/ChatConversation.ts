/**
 * A chat-completions conversation: every turn resends the history (user messages and the answers' text) with the
 * new user message at the end, as an OpenAI client keeps a conversation over a stateless API.
 */
import type { ClientTarget } from '../clients/BenchClient.ts';
import { ChatBenchClient, type ChatMessage } from '../clients/ChatBenchClient.ts';
import type { RequestTrace } from '../trace.ts';
import type { ConversationClient, TurnRequest } from './ConversationClient.ts';

export class ChatConversation implements ConversationClient {
  readonly #client: ChatBenchClient;
  readonly #messages: ChatMessage[] = [];

  constructor(target: ClientTarget, system: string | null = null) {
    this.#client = new ChatBenchClient(target);
    if (system !== null) this.#messages.push({ role: 'system', content: system });
  }

  async turn(r: TurnRequest): Promise<RequestTrace> {
    // A failed turn's question stays, as in a Realtime session (the server keeps the user item): the next turn
    // asks with it in the history, and both protocols' conversations grow alike.
    this.#messages.push({ role: 'user', content: r.prompt });
    const { transcript, ...trace } = await this.#client.send(this.#messages, r);
    if (trace.ok && transcript.length > 0) this.#messages.push({ role: 'assistant', content: transcript });
    return trace;
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}
