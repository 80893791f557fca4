/**
 * A Realtime conversation: one WebSocket session per conversation; each turn adds the user's message
 * (conversation.item.create, input_text), then, once the server holds it, asks for an answer in the conversation
 * (response.create: audio, max_output_tokens with ignore_eos, the turn's seed) and waits for its response.done.
 *
 * The clock of a turn starts at response.create: the item's round trip is not part of the answer's latency. A turn
 * fails on a response.done that is not completed or incomplete, or on an error event; an error naming the
 * response.create (the create refused, e.g. a conversation past the Thinker's positions) ends the turn at once,
 * since no response.done will follow. Arrival times are taken first thing in the socket's message handler.
 */
import { WebSocket } from 'ws';
import { chunkingFields, type ClientTarget } from '../clients/BenchClient.ts';
import { openRealtimeSocket } from '../clients/RealtimeBenchClient.ts';
import { deltaTraceEvent, responseOutcome, usageFields, type RealtimeEvent } from '../clients/realtimeEvents.ts';
import type { RequestTrace, TraceEvent } from '../trace.ts';
import type { ConversationClient, TurnRequest } from './ConversationClient.ts';

const SAMPLE_RATE_HZ = 24_000; // Realtime GA audio/pcm is 24 kHz mono pcm16
const DRAIN_TIMEOUT_MS = 10_000; // a cancelled or errored response that never ends: give it this, then go on

interface Arrival {
  readonly atMs: number;
  readonly e: RealtimeEvent;
}

export class RealtimeConversation implements ConversationClient {
  readonly #queue: Arrival[] = [];
  #wake: (() => void) | null = null;
  #closed = false;
  #turns = 0;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const atMs = performance.now();
      this.#queue.push({ atMs, e: JSON.parse(data.toString()) as RealtimeEvent });
      this.#wake?.();
    });
    ws.on('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
  }

  /** `system`: the session's instructions, set (and confirmed by session.updated) before the first turn. */
  static async connect(target: ClientTarget, system: string | null = null): Promise<RealtimeConversation> {
    const conversation = new RealtimeConversation(await openRealtimeSocket(target));
    if (system !== null) await conversation.#instruct(system);
    return conversation;
  }

  async #instruct(instructions: string): Promise<void> {
    const eventId = 'bench_instructions';
    this.#send({ type: 'session.update', event_id: eventId, session: { type: 'realtime', instructions } });
    const deadlineMs = performance.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const got = await this.#next(deadlineMs);
      if (typeof got === 'string') throw new Error(`no session.updated for the bench's instructions (${got})`);
      if (got.e.type === 'error' && got.e.error?.event_id === eventId)
        throw new Error(`the bench's instructions were refused: ${errorText(got.e)}`);
      if (got.e.type === 'session.updated') return;
    }
  }

  async turn(r: TurnRequest): Promise<RequestTrace> {
    const n = ++this.#turns;
    const deadlineMs = performance.now() + r.timeoutMs;
    const failed = (startMs: number, error: string): RequestTrace => ({ startMs, events: [], ok: false, error });
    const itemEventId = `bench_turn_${n}_item`;
    const responseEventId = `bench_turn_${n}_response`;

    // 1. The user's message joins the conversation (or is refused, naming our event).
    if (
      !this.#send({
        type: 'conversation.item.create',
        event_id: itemEventId,
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: r.prompt }] },
      })
    )
      return failed(performance.now(), 'the realtime socket is closed');
    for (;;) {
      const got = await this.#next(deadlineMs);
      if (got === 'closed') return failed(performance.now(), 'the server closed the realtime socket');
      if (got === 'timeout') return failed(performance.now(), `no conversation.item.done within ${r.timeoutMs} ms`);
      const { e } = got;
      if (e.type === 'error' && e.error?.event_id === itemEventId)
        return failed(performance.now(), `conversation.item.create refused: ${errorText(e)}`);
      // Only ours is a user item: earlier turns' events (the answers' items) are passed over.
      if (e.type === 'conversation.item.done' && e.item?.role === 'user') break;
    }

    // 2. The answer, in the conversation.
    const startMs = performance.now();
    const events: TraceEvent[] = [];
    this.#send({
      type: 'response.create',
      event_id: responseEventId,
      response: {
        output_modalities: ['audio'],
        max_output_tokens: r.outputLen,
        ignore_eos: true,
        seed: r.seed,
        ...chunkingFields(r),
      },
    });
    let requestId: string | undefined;
    let error: string | undefined;
    const trace = (ok: boolean, extra: Partial<RequestTrace> = {}): RequestTrace => ({
      startMs,
      events,
      ok: ok && error === undefined,
      ...(error !== undefined ? { error } : {}),
      ...(requestId !== undefined ? { requestId } : {}),
      ...extra,
    });
    for (;;) {
      const got = await this.#next(deadlineMs);
      if (got === 'closed') {
        error ??= 'the server closed the realtime socket';
        return trace(false);
      }
      if (got === 'timeout') {
        error ??= `no response.done within ${r.timeoutMs} ms`;
        // A session runs one response at a time: the next turn must wait for this one's end.
        if (requestId !== undefined) {
          this.#send({ type: 'response.cancel' });
          await this.#drain(requestId);
        }
        return trace(false);
      }
      const { e, atMs } = got;
      if (e.type === 'response.created') {
        requestId = e.response?.id;
        continue;
      }
      const delta = deltaTraceEvent(e, atMs, SAMPLE_RATE_HZ);
      if (delta) {
        events.push(delta);
        continue;
      }
      if (e.type === 'error') {
        error ??= errorText(e);
        // An error naming our response.create refused it: no response.done will follow. Any other error fails the
        // turn too, but its response.done still ends it (a session runs one response at a time: the next turn's
        // response.create would be refused while this one runs).
        if (requestId === undefined && e.error?.event_id === responseEventId) return trace(false);
        continue;
      }
      if (e.type !== 'response.done' || e.response?.id !== requestId) continue;
      events.push({ type: 'done', atMs });
      const outcome = responseOutcome(e)!;
      if (!outcome.ok) error ??= outcome.error;
      return trace(outcome.ok, usageFields(e.response));
    }
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    this.ws.close();
    await closed;
  }

  /** Sends one client event; false when the socket is no longer open. */
  #send(event: Record<string, unknown>): boolean {
    if (this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(event));
    return true;
  }

  /** The next server event, or why none will come before deadlineMs. */
  async #next(deadlineMs: number): Promise<Arrival | 'closed' | 'timeout'> {
    for (;;) {
      const arrival = this.#queue.shift();
      if (arrival) return arrival;
      if (this.#closed) return 'closed';
      const leftMs = deadlineMs - performance.now();
      if (leftMs <= 0) return 'timeout';
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, leftMs);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = null;
    }
  }

  /** Waits (at most DRAIN_TIMEOUT_MS) for the response.done of a response this client gave up on. */
  async #drain(responseId: string): Promise<void> {
    const deadlineMs = performance.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const got = await this.#next(deadlineMs);
      if (typeof got === 'string') return;
      if (got.e.type === 'response.done' && got.e.response?.id === responseId) return;
    }
  }
}

function errorText(e: RealtimeEvent): string {
  return `${e.error?.code ?? 'error'}: ${e.error?.message ?? ''}`;
}
