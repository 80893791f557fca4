/**
 * One conversation of `chorus bench --turns`: a session that keeps its history between turns, so each turn's
 * prompt is the whole conversation so far (what a prefix cache is for). Realtime: one WebSocket session whose
 * conversation the server holds; chat: the client resends the growing `messages`, its answers included.
 */
import type { BenchRequest } from '../clients/BenchClient.ts';
import type { RequestTrace } from '../trace.ts';

/** One user turn: `prompt` is the new user message only. */
export type TurnRequest = BenchRequest;

export interface ConversationClient {
  /**
   * Adds the user message and waits for the answer. Never rejects: a failed turn (refused, failed, timed out) is a
   * trace with ok false, and the conversation goes on with the next turn.
   */
  turn(r: TurnRequest): Promise<RequestTrace>;
  close(): Promise<void>;
}
