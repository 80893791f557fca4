/**
 * The POST /v1/chat/completions load client (stream: true, text + audio as base64 pcm16 in SSE chunks).
 * node:http rather than fetch: its 'data' events fire straight from the socket, without a web-stream layer
 * between the bytes' arrival and the timestamp. One keep-alive connection per concurrency slot.
 */
import http from 'node:http';
import type { RequestTrace, TraceEvent } from '../trace.ts';
import {
  chunkingFields,
  pcm16SamplesInBase64,
  type BenchClient,
  type BenchRequest,
  type ClientTarget,
} from './BenchClient.ts';
import { newTraceparent } from './traceparent.ts';

const SAMPLE_RATE_HZ = 24_000; // streamed chat audio is 24 kHz mono pcm16

interface ChunkBody {
  readonly id?: string;
  readonly choices?: readonly {
    readonly delta?: {
      readonly content?: string | null;
      readonly audio?: { readonly data?: string; readonly transcript?: string };
    };
  }[];
  readonly usage?: {
    readonly prompt_tokens?: number;
    readonly prompt_tokens_details?: { readonly cached_tokens?: number };
    readonly completion_tokens_details?: { readonly text_tokens?: number };
  };
  readonly error?: { readonly code?: string; readonly message?: string };
}

/** What the SSE events of one answer said, besides the trace events. */
interface Parsed {
  requestId?: string;
  promptTokens?: number;
  cachedTokens?: number;
  textTokens?: number;
}

export class ChatBenchClient implements BenchClient {
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly target: ClientTarget) {}

  request(r: BenchRequest): Promise<RequestTrace> {
    const body = JSON.stringify({
      messages: [{ role: 'user', content: r.prompt }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: r.outputLen,
      ignore_eos: true,
      seed: r.seed,
      ...chunkingFields(r),
    });
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    };
    if (this.target.apiKey) headers.authorization = `Bearer ${this.target.apiKey}`;
    const { traceparent, traceId } = newTraceparent();
    headers.traceparent = traceparent;
    return new Promise<RequestTrace>((resolve) => {
      const events: TraceEvent[] = [];
      const parsed: Parsed = {};
      let settled = false;
      const startMs = performance.now();
      const finish = (ok: boolean, error?: string): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ startMs, events, ok, traceId, ...(error !== undefined ? { error } : {}), ...parsed });
      };
      const req = http.request(`${this.target.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        agent: this.#agent,
        headers,
      });
      const timer = setTimeout(() => {
        finish(false, `no [DONE] within ${r.timeoutMs} ms`);
        req.destroy(); // closing the connection cancels the request on the server
      }, r.timeoutMs);
      req.on('error', (err) => finish(false, `request failed: ${err.message}`));
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => finish(false, `HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const atMs = performance.now();
          buffered += chunk;
          let end: number;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const block = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const outcome = onSseEvent(block, atMs, events, parsed);
            if (outcome !== null) finish(outcome.ok, outcome.error);
          }
        });
        res.on('end', () => finish(false, 'the stream ended without [DONE]'));
        res.on('error', (err) => finish(false, `stream failed: ${err.message}`));
      });
      req.end(body);
    });
  }

  async close(): Promise<void> {
    this.#agent.destroy();
  }
}

/** One SSE event; returns the request's outcome when the event ends it. */
function onSseEvent(
  block: string,
  atMs: number,
  events: TraceEvent[],
  parsed: Parsed,
): { ok: boolean; error?: string } | null {
  const data = block
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trimStart())
    .join('\n');
  if (data.length === 0) return null;
  if (data === '[DONE]') {
    events.push({ type: 'done', atMs });
    return { ok: true };
  }
  const chunk = JSON.parse(data) as ChunkBody;
  if (chunk.error) return { ok: false, error: `${chunk.error.code ?? 'error'}: ${chunk.error.message ?? ''}` };
  parsed.requestId ??= chunk.id;
  const delta = chunk.choices?.[0]?.delta;
  // Text-only answers put text in content; with audio on it comes (once) as the audio's transcript.
  if (delta?.content || delta?.audio?.transcript) events.push({ type: 'text', atMs });
  if (delta?.audio?.data)
    events.push({ type: 'audio', atMs, samples: pcm16SamplesInBase64(delta.audio.data), sampleRateHz: SAMPLE_RATE_HZ });
  if (chunk.usage) {
    parsed.promptTokens = chunk.usage.prompt_tokens;
    parsed.cachedTokens = chunk.usage.prompt_tokens_details?.cached_tokens;
    parsed.textTokens = chunk.usage.completion_tokens_details?.text_tokens;
  }
  return null;
}
