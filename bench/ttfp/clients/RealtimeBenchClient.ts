/**
 * The /v1/realtime load client: one WebSocket session per concurrency slot, one out-of-band response per
 * request (`conversation: 'none'` with its own `input`), so requests never see each other's turns and the
 * session's conversation does not grow over a run. Each response gets a trace of its own (response.metadata's
 * traceparent): the session's, from the upgrade, would name every request of the session with one trace id.
 */
import type { RequestTrace } from '../trace.ts';
import { chunkingFields, type BenchClient, type BenchRequest, type ClientTarget } from './BenchClient.ts';
import { RealtimeSession } from './RealtimeSession.ts';
import { newTraceparent } from './traceparent.ts';

export class RealtimeBenchClient implements BenchClient {
  #requests = 0;
  #busy = false;

  constructor(private readonly session: Pick<RealtimeSession, 'send' | 'answer' | 'close'>) {}

  static async connect(target: ClientTarget): Promise<RealtimeBenchClient> {
    return new RealtimeBenchClient(await RealtimeSession.open(target));
  }

  async request(r: BenchRequest): Promise<RequestTrace> {
    if (this.#busy) throw new Error('one request at a time per realtime session');
    const createEventId = `bench_request_${++this.#requests}`;
    const { traceparent, traceId } = newTraceparent();
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
        metadata: { traceparent },
      },
    });
    if (!sent) return { startMs, events: [], ok: false, error: 'the realtime socket is closed' };
    this.#busy = true;
    try {
      const trace = await this.session.answer(createEventId, startMs, startMs + r.timeoutMs, r.timeoutMs);
      return { ...trace, traceId };
    } finally {
      this.#busy = false;
    }
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
