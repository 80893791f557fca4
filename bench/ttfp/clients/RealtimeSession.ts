/**
 * One /v1/realtime WebSocket as every bench client speaks it (load, conversations, soak): server events queue up
 * with their arrival time, taken first thing in the socket's message handler before the frame is parsed, and a
 * client reads them in order with a deadline (next, until). `answer` reads one response to its response.done.
 */
import { WebSocket } from 'ws';
import type { RequestTrace, TraceEvent } from '../trace.ts';
import type { ClientTarget } from './BenchClient.ts';
import { deltaTraceEvent, responseOutcome, usageFields, type RealtimeEvent } from './realtimeEvents.ts';

const SAMPLE_RATE_HZ = 24_000; // Realtime GA audio/pcm is 24 kHz mono pcm16
const CONNECT_TIMEOUT_MS = 10_000;
const DRAIN_TIMEOUT_MS = 10_000; // a cancelled or errored response that never ends: give it this, then go on

export interface Arrival {
  readonly atMs: number;
  readonly e: RealtimeEvent;
}

/** Why no event came: the socket closed, or the deadline passed. */
export type NoEvent = 'closed' | 'timeout';

export class RealtimeSession {
  readonly #queue: Arrival[] = [];
  #wake: (() => void) | null = null;
  #closed = false;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const atMs = performance.now();
      this.#queue.push({ atMs, e: JSON.parse(String(data)) as RealtimeEvent });
      this.#wake?.();
    });
    ws.on('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
  }

  /** A session, once its session.created has arrived (it is usable from then on). */
  static async open(target: ClientTarget): Promise<RealtimeSession> {
    const url = `${target.baseUrl.replace(/^http/, 'ws')}/v1/realtime`;
    const ws = new WebSocket(url, {
      headers: target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {},
      perMessageDeflate: false,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no realtime session from ${url} within ${CONNECT_TIMEOUT_MS} ms`)),
          CONNECT_TIMEOUT_MS,
        );
        ws.once('error', (err) => {
          clearTimeout(timer);
          reject(new Error(`cannot open ${url}: ${err.message}`));
        });
        ws.once('message', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    } catch (err) {
      ws.on('error', () => undefined); // terminate() of a socket still connecting emits one more error
      ws.terminate();
      throw err;
    }
    return new RealtimeSession(ws);
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Sends one client event (a string as it is: fuzz); false when the socket is no longer open. */
  send(event: Record<string, unknown> | string): boolean {
    if (!this.open) return false;
    this.ws.send(typeof event === 'string' ? event : JSON.stringify(event));
    return true;
  }

  /** The next server event, or why none will come before deadlineMs. */
  async next(deadlineMs = Infinity): Promise<Arrival | NoEvent> {
    for (;;) {
      const arrival = this.#queue.shift();
      if (arrival) return arrival;
      if (this.#closed) return 'closed';
      const leftMs = deadlineMs - performance.now();
      if (leftMs <= 0) return 'timeout';
      await new Promise<void>((resolve) => {
        const timer = Number.isFinite(leftMs) ? setTimeout(done, leftMs) : undefined;
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = null;
    }
  }

  /** The next event `wanted` accepts (the others are read and dropped), or why none came. */
  async until(deadlineMs: number, wanted: (e: RealtimeEvent) => boolean): Promise<Arrival | NoEvent> {
    for (;;) {
      const got = await this.next(deadlineMs);
      if (typeof got === 'string' || wanted(got.e)) return got;
    }
  }

  /** Sends session.update and waits for session.updated; an error naming the update rejects. */
  async update(session: Record<string, unknown>, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
    const eventId = `bench_update_${Math.random().toString(36).slice(2)}`;
    this.send({ type: 'session.update', event_id: eventId, session });
    const got = await this.until(
      performance.now() + timeoutMs,
      (e) => e.type === 'session.updated' || isErrorFor(e, eventId),
    );
    if (typeof got === 'string') throw new Error(`no session.updated (${got})`);
    if (got.e.type === 'error') throw new Error(`session.update refused: ${errorText(got.e)}`);
  }

  /**
   * Reads the response the response.create `createEventId` asks for, to its response.done: the trace of its text
   * and audio deltas. A response.done that is not completed or incomplete, or an error event, fails it; an error
   * naming the create (refused) ends it at once, since no response.done will follow. Past the deadline the response
   * is cancelled and its end awaited (a session runs one response at a time). `startMs`: taken before the create.
   */
  async answer(createEventId: string, startMs: number, deadlineMs: number, timeoutMs: number): Promise<RequestTrace> {
    const events: TraceEvent[] = [];
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
      const got = await this.next(deadlineMs);
      if (got === 'closed') {
        error ??= 'the server closed the realtime socket';
        return trace(false);
      }
      if (got === 'timeout') {
        error ??= `no response.done within ${timeoutMs} ms`;
        if (requestId !== undefined) await this.#cancel(requestId);
        return trace(false);
      }
      const { e, atMs } = got;
      if (e.type === 'response.created') {
        requestId ??= e.response?.id;
        continue;
      }
      const delta = requestId === undefined ? null : deltaTraceEvent(e, atMs, SAMPLE_RATE_HZ);
      if (delta) {
        events.push(delta);
        continue;
      }
      if (e.type === 'error') {
        error ??= errorText(e);
        // An error naming our response.create refused it. Any other error fails the response too, but its
        // response.done still ends it (the next response.create would be refused while this one runs).
        if (requestId === undefined && e.error?.event_id === createEventId) return trace(false);
        continue;
      }
      if (e.type !== 'response.done' || requestId === undefined || e.response?.id !== requestId) continue;
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

  /** Cancels a response this client gave up on and waits (at most DRAIN_TIMEOUT_MS) for its response.done. */
  async #cancel(responseId: string): Promise<void> {
    this.send({ type: 'response.cancel', response_id: responseId });
    await this.until(
      performance.now() + DRAIN_TIMEOUT_MS,
      (e) => e.type === 'response.done' && e.response?.id === responseId,
    );
  }
}

export function isErrorFor(e: RealtimeEvent, eventId: string): boolean {
  return e.type === 'error' && e.error?.event_id === eventId;
}

export function errorText(e: RealtimeEvent): string {
  return `${e.error?.code ?? 'error'}: ${e.error?.message ?? ''}`;
}
