/**
 * Streamed chat completions as the standalone scripts send them (bench/admission, bench/video, the cache probe):
 * the events of a response's body as they arrive, a spoken answer timed from its send, and a text answer's TTFT.
 */
import { pcm16SamplesInBase64 } from './ttfp/clients/BenchClient.ts';

/** Streamed chat audio is 24 kHz mono pcm16. */
const CHAT_AUDIO_RATE_HZ = 24_000;

/** A chat completion chunk, as far as the scripts read it. */
export interface ChatChunk {
  readonly error?: { readonly code: string; readonly message?: string };
  readonly choices?: readonly {
    readonly delta?: { readonly content?: string | null; readonly audio?: { data?: string } };
  }[];
  readonly usage?: { readonly prompt_tokens: number; readonly prompt_tokens_details?: { cached_tokens?: number } };
}

/**
 * Each `data:` event of a chat completion stream, parsed (`[DONE]` as itself), as soon as its line has come. A line
 * is looked for in each new piece only, and its earlier pieces joined once: an audio delta's line (2 s of audio, 128
 * KB of base64) comes in many pieces, and splitting all that had come at each piece made the bench's client spend
 * 0.4-0.5 ms of CPU an event, a burst of sixteen long answers' chunks 6-9 ms on the cores the server runs on
 * (0.25 ms an event this way; bench/NOTES.md, "The one miss, and the bench's own client").
 */
export async function* chatEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatChunk | '[DONE]'> {
  const decoder = new TextDecoder();
  let parts: string[] = [];
  for await (const bytes of body) {
    const piece = decoder.decode(bytes, { stream: true });
    let from = 0;
    for (let nl = piece.indexOf('\n'); nl >= 0; from = nl + 1, nl = piece.indexOf('\n', from)) {
      parts.push(piece.slice(from, nl));
      const line = parts.length === 1 ? parts[0] : parts.join('');
      parts = [];
      if (line === 'data: [DONE]') yield '[DONE]';
      else if (line.startsWith('data: {')) yield JSON.parse(line.slice(6)) as ChatChunk;
    }
    if (from < piece.length) parts.push(piece.slice(from));
  }
}

/**
 * One streaming audio chat against a running server, timed from its send: when the response's headers came, its
 * first audio, its end, and what went wrong (a non-200 status, an error event mid-stream, no [DONE]).
 */
export interface StreamedChat {
  /** performance.now() at the send: the origin of the other times, to compare chats with each other. */
  readonly sentAtMs: number;
  readonly status: number;
  readonly headersMs: number;
  readonly firstAudioMs: number | null;
  readonly endMs: number;
  readonly retryAfter: string | null;
  /** Error codes of error events in the stream (a 200 that failed on the way), each with its message. */
  readonly errors: readonly string[];
  readonly done: boolean;
  /** The caller stopped reading (onAudio said 'stop') before the stream ended: the client went away. */
  readonly stopped: boolean;
}

export interface ChatOptions {
  readonly url: string;
  readonly maxTokens: number;
  readonly prompt: string;
  /**
   * Each audio delta's arrival, in ms from the send, and the audio it carries (ms); 'stop' ends the reading there
   * (the connection is closed, as a client that leaves).
   */
  readonly onAudio?: (atMs: number, durationMs: number) => void | 'stop';
}

export async function streamChat(o: ChatOptions): Promise<StreamedChat> {
  const sentAt = performance.now();
  const r = await fetch(`${o.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: o.prompt }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      max_tokens: o.maxTokens,
      stream: true,
    }),
  });
  const since = () => performance.now() - sentAt;
  const head = { sentAtMs: sentAt, status: r.status, headersMs: since(), retryAfter: r.headers.get('retry-after') };
  if (r.status !== 200) {
    await r.body?.cancel();
    return { ...head, firstAudioMs: null, endMs: since(), errors: [], done: false, stopped: false };
  }
  let firstAudioMs: number | null = null;
  const errors: string[] = [];
  let done = false;
  let stopped = false;
  for await (const event of chatEvents(r.body!)) {
    if (event === '[DONE]') {
      done = true;
      continue;
    }
    if (event.error) errors.push(`${event.error.code}: ${event.error.message ?? ''}`);
    const audio = event.choices?.[0]?.delta?.audio?.data;
    if (audio) {
      const atMs = since();
      firstAudioMs ??= atMs;
      if (o.onAudio?.(atMs, (pcm16SamplesInBase64(audio) / CHAT_AUDIO_RATE_HZ) * 1000) === 'stop') {
        stopped = true;
        break; // the generator's return cancels the body: the connection closes
      }
    }
  }
  return { ...head, firstAudioMs, endMs: since(), errors, done, stopped };
}

/**
 * A streamed text chat completion of `body` (stream fields added): the client's TTFT, body sent -> the first content
 * delta (the role's empty one, sent with the first text), and the usage; throws on an error status.
 */
export async function streamedTtft(
  baseUrl: string,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ ttftMs: number; cachedTokens: number; promptTokens: number }> {
  const start = performance.now();
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ ...(body as object), stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const figures = { ttftMs: NaN, cachedTokens: 0, promptTokens: 0 };
  for await (const event of chatEvents(res.body)) {
    if (event === '[DONE]') continue;
    if (Number.isNaN(figures.ttftMs) && typeof event.choices?.[0]?.delta?.content === 'string')
      figures.ttftMs = performance.now() - start;
    if (!event.usage) continue;
    figures.promptTokens = event.usage.prompt_tokens;
    figures.cachedTokens = event.usage.prompt_tokens_details?.cached_tokens ?? 0;
  }
  return figures;
}
