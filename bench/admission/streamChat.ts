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
  /** Error codes of error events in the stream (a 200 that failed on the way). */
  readonly errors: readonly string[];
  readonly done: boolean;
}

export interface ChatOptions {
  readonly url: string;
  readonly maxTokens: number;
  readonly prompt: string;
  /** Each audio delta's arrival, in ms from the send. */
  readonly onAudio?: (atMs: number) => void;
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
    return { ...head, firstAudioMs: null, endMs: since(), errors: [], done: false };
  }
  let firstAudioMs: number | null = null;
  const errors: string[] = [];
  let done = false;
  let pending = '';
  const decoder = new TextDecoder();
  for await (const bytes of r.body!) {
    pending += decoder.decode(bytes as Uint8Array, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('data: ')) continue;
      if (line === 'data: [DONE]') {
        done = true;
        continue;
      }
      const event = JSON.parse(line.slice(6)) as {
        error?: { code: string };
        choices?: { delta?: { audio?: { data?: string } } }[];
      };
      if (event.error) errors.push(event.error.code);
      if (event.choices?.[0]?.delta?.audio?.data) {
        const atMs = since();
        firstAudioMs ??= atMs;
        o.onAudio?.(atMs);
      }
    }
  }
  return { ...head, firstAudioMs, endMs: since(), errors, done };
}
