/**
 * Closed-loop conversations at a fixed concurrency: each slot opens a conversation (a Realtime session, or a chat
 * history), runs its turns one after another, closes it and takes the next, until all conversations are done.
 */
import type { BenchRequest } from '../clients/BenchClient.ts';
import { closedLoop } from '../../common.ts';
import type { RequestTrace } from '../trace.ts';
import type { ConversationClient } from './ConversationClient.ts';

export interface ConversationLoadOptions {
  /** [conversation][turn] user messages. */
  readonly conversations: readonly (readonly string[])[];
  readonly concurrency: number;
  readonly outputLen: number;
  /** Turn t of conversation i (from 0) gets seed + i * turns + t, wherever it runs. */
  readonly seed: number;
  /** Per turn. */
  readonly timeoutMs: number;
  /** Chorus extensions sent with every turn (initial chunk, TTFP target). */
  readonly chunking?: Pick<BenchRequest, 'initialCodecChunkFrames' | 'ttfpTargetMs'>;
  readonly openConversation: () => Promise<ConversationClient>;
  readonly onTurnDone?: (trace: RequestTrace) => void;
}

export interface ConversationLoadResult {
  /** [conversation][turn], in the order of `conversations`. */
  readonly traces: readonly (readonly RequestTrace[])[];
  /** From the first turn's send to the last answer's end. */
  readonly durationMs: number;
}

export async function runConversations(o: ConversationLoadOptions): Promise<ConversationLoadResult> {
  const traces: RequestTrace[][] = o.conversations.map(() => []);
  const startedMs = performance.now();
  await closedLoop(o.conversations.length, o.concurrency, async (i) => {
    const messages = o.conversations[i];
    const client = await o.openConversation();
    try {
      for (let t = 0; t < messages.length; t++) {
        const trace = await client.turn({
          prompt: messages[t],
          outputLen: o.outputLen,
          seed: o.seed + i * messages.length + t,
          timeoutMs: o.timeoutMs,
          ...o.chunking,
        });
        traces[i].push(trace);
        o.onTurnDone?.(trace);
      }
    } finally {
      await client.close();
    }
  });
  return { traces, durationMs: performance.now() - startedMs };
}
