/**
 * The /v1/realtime load client: one WebSocket session per concurrency slot, one out-of-band response per
 * request (`conversation: 'none'` with its own `input`), so requests never see each other's turns and the
 * session's conversation does not grow over a run.
 */
import type { RequestTrace } from '../trace.ts';
import { chunkingFields, type BenchClient, type BenchRequest, type ClientTarget } from './BenchClient.ts';
import { RealtimeSession } from './RealtimeSession.ts';
import { newTraceparent } from './traceparent.ts';

export class RealtimeBenchClient implements BenchClient {
  #requests = 0;
  #busy = false;

  private constructor(
    private readonly session: RealtimeSession,
    /** The session's traceparent's trace id: every response of the session is a span of that trace. */
    private readonly traceId: string,
  ) {}

  static async connect(target: ClientTarget): Promise<RealtimeBenchClient> {
    const { traceparent, traceId } = newTraceparent();
    return new RealtimeBenchClient(await RealtimeSession.open(target, { traceparent }), traceId);
  }

  async request(r: BenchRequest): Promise<RequestTrace> {
    if (this.#busy) throw new Error('one request at a time per realtime session');
    const createEventId = `bench_request_${++this.#requests}`;
    const startMs = performance.now();
    const sent = this.session.send({
      type: 'response.create',
      event_id: createEventId,
      response: {
        conversation: 'none',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: r.prompt }] }],
        output_modalities: ['audio'],
        max_output_tokens: r.outputLen,
        ignore_eos: true,
        seed: r.seed,
        ...chunkingFields(r),
      },
    });
    if (!sent) return { startMs, events: [], ok: false, error: 'the realtime socket is closed' };
    this.#busy = true;
    try {
      const trace = await this.session.answer(createEventId, startMs, startMs + r.timeoutMs, r.timeoutMs);
      return { ...trace, traceId: this.traceId };
    } finally {
      this.#busy = false;
    }
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
