/**
 * The echo kind's protocol (a kind that lives in the test tree: issue 28 item 2's proof that a new kind is its own
 * folder + a registry entry): its add arguments, its stats section and the one message main may send it.
 */
import { kindSectionOf } from '../../../../stages/kindStats.ts';
import type { KindMessage } from '../../../../src/worker/messages.ts';

export interface EchoArgs {
  /** What it writes back, once per echo (the request's prompt). */
  readonly tokenIds: readonly number[];
  /** Between two echoes, ms: long enough for main's `stop` to arrive mid-request. */
  readonly intervalMs: number;
}

export interface EchoStats {
  readonly echo?: { readonly echoes: number; readonly stopped: number };
}

export const echoStatsOf = kindSectionOf<EchoStats>();

/** Stop echoing: the request ends now with finish reason stop. */
export interface EchoStop {
  readonly type: 'stop';
}

export const echoMessage = {
  stop: (requestId: string): KindMessage<EchoStop> => ({ type: 'kind', requestId, body: { type: 'stop' } }),
};

export function isEchoStop(body: unknown): body is EchoStop {
  return typeof body === 'object' && body !== null && (body as { type?: unknown }).type === 'stop';
}
