/**
 * The /v1/realtime load client: one WebSocket session per concurrency slot, one out-of-band response per
 * request (`conversation: 'none'` with its own `input`), so requests never see each other's turns and the
 * session's conversation does not grow over a run.
 *
 * Arrival times are taken first thing in the socket's message handler, before the frame is parsed.
 */
import { WebSocket } from 'ws';
import type { RequestTrace, TraceEvent } from '../trace.ts';
import { chunkingFields, type BenchClient, type BenchRequest, type ClientTarget } from './BenchClient.ts';
import { newTraceparent } from './traceparent.ts';
import { deltaTraceEvent, responseOutcome, usageFields, type RealtimeEvent } from './realtimeEvents.ts';

const SAMPLE_RATE_HZ = 24_000; // Realtime GA audio/pcm is 24 kHz mono pcm16
const CONNECT_TIMEOUT_MS = 10_000;
const DRAIN_TIMEOUT_MS = 10_000; // a cancelled response that never ends: give the session up to this, then go on

interface Pending {
  readonly startMs: number;
  readonly events: TraceEvent[];
  requestId?: string;
  readonly finish: (outcome: { ok: boolean; error?: string; usage?: RealtimeEvent['response'] }) => void;
}

export class RealtimeBenchClient implements BenchClient {
  #pending: Pending | null = null;
  /** After a timeout: resolves when the cancelled response's response.done has arrived (the session is free again). */
  #draining: Promise<void> | null = null;
  #onDrained: (() => void) | null = null;

  private constructor(
    private readonly ws: WebSocket,
    /** The session's traceparent's trace id: every response of the session is a span of that trace. */
    private readonly traceId: string,
  ) {
    ws.on('message', (data) => this.#onMessage(performance.now(), data.toString()));
    ws.on('close', () => {
      this.#drained();
      this.#pending?.finish({ ok: false, error: 'the server closed the realtime socket' });
    });
  }

  static async connect(target: ClientTarget): Promise<RealtimeBenchClient> {
    const { traceparent, traceId } = newTraceparent();
    return new RealtimeBenchClient(await openRealtimeSocket(target, { traceparent }), traceId);
  }

  async request(r: BenchRequest): Promise<RequestTrace> {
    if (this.#pending) throw new Error('one request at a time per realtime session');
    if (this.#draining) await this.#draining;
    if (this.ws.readyState !== WebSocket.OPEN) {
      return { startMs: performance.now(), events: [], ok: false, error: 'the realtime socket is closed' };
    }
    return new Promise<RequestTrace>((resolve) => {
      const events: TraceEvent[] = [];
      let timer: NodeJS.Timeout | undefined;
      const startMs = performance.now();
      const pending: Pending = {
        startMs,
        events,
        finish: ({ ok, error, usage }) => {
          if (this.#pending !== pending) return;
          this.#pending = null;
          clearTimeout(timer);
          resolve({
            startMs,
            events,
            ok,
            traceId: this.traceId,
            ...(error !== undefined ? { error } : {}),
            ...(pending.requestId !== undefined ? { requestId: pending.requestId } : {}),
            ...usageFields(usage),
          });
        },
      };
      this.#pending = pending;
      timer = setTimeout(() => {
        if (this.ws.readyState === WebSocket.OPEN) {
          // A session runs one response at a time: the next request must wait for this one's response.done.
          this.#draining = new Promise<void>((done) => {
            const drainTimer = setTimeout(() => this.#drained(), DRAIN_TIMEOUT_MS);
            this.#onDrained = () => {
              clearTimeout(drainTimer);
              done();
            };
          });
          this.ws.send(JSON.stringify({ type: 'response.cancel' }));
        }
        pending.finish({ ok: false, error: `no response.done within ${r.timeoutMs} ms` });
      }, r.timeoutMs);
      this.ws.send(
        JSON.stringify({
          type: 'response.create',
          response: {
            conversation: 'none',
            input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: r.prompt }] }],
            output_modalities: ['audio'],
            max_output_tokens: r.outputLen,
            ignore_eos: true,
            seed: r.seed,
            ...chunkingFields(r),
          },
        }),
      );
    });
  }

  #drained(): void {
    this.#draining = null;
    const f = this.#onDrained;
    this.#onDrained = null;
    f?.();
  }

  #onMessage(atMs: number, text: string): void {
    const e = JSON.parse(text) as RealtimeEvent;
    const p = this.#pending;
    if (!p) {
      // The tail of a timed-out response: only its end matters.
      if (e.type === 'response.done') this.#drained();
      return;
    }
    if (e.type === 'response.created') {
      p.requestId = e.response?.id;
      return;
    }
    const delta = deltaTraceEvent(e, atMs, SAMPLE_RATE_HZ);
    if (delta) {
      p.events.push(delta);
      return;
    }
    const outcome = responseOutcome(e);
    if (!outcome) return;
    if (e.type === 'response.done') p.events.push({ type: 'done', atMs });
    p.finish({ ...outcome, ...(e.type === 'response.done' ? { usage: e.response } : {}) });
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    this.ws.close();
    await closed;
  }
}

/** A /v1/realtime socket, once its session.created has arrived (the session is usable from then on). */
export async function openRealtimeSocket(
  target: ClientTarget,
  headers: Readonly<Record<string, string>> = {},
): Promise<WebSocket> {
  const url = `${target.baseUrl.replace(/^http/, 'ws')}/v1/realtime`;
  const ws = new WebSocket(url, {
    headers: { ...headers, ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}) },
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no realtime session from ${url} within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot open ${url}: ${err.message}`));
    });
    // The session is usable once session.created has arrived.
    ws.once('message', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return ws;
}
