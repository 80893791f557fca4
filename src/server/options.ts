/**
 * Server options and their defaults. Everything that bounds memory per client lives here, so a reviewer can see
 * at one glance what a single connection may cost.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { TraceBuffer } from '../tracing/TraceBuffer.ts';

export interface ServerOptions {
  /** Interface to bind. Loopback by default: exposing the server is a deliberate choice. */
  readonly host?: string;
  readonly port?: number;
  /**
   * PEM certificate chain and private key: the server speaks https and wss on its one port (the official
   * openai SDK's Realtime client always connects with wss://). Absent: plain http and ws.
   */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /**
   * Bearer token required on HTTP and on the WebSocket upgrade, or several (one per tenant: each key is its own
   * cache partition unless the config's security.cache_partition is shared). Default: CHORUS_API_KEY, else none.
   */
  readonly apiKey?: string | readonly string[] | null;
  /**
   * Hot reload (POST /admin/reload): re-reads the config and switches the engine to it (ReloadableEngine).
   * Absent: no such route. Without an API key the route answers loopback clients only.
   */
  readonly reload?: () => Promise<{ readonly changedStages: readonly string[]; readonly startMs: number }>;
  /**
   * Browser origins allowed besides the server's own (same-origin is always allowed; requests without an
   * Origin header are not from a browser page and are allowed). '*' allows every origin.
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * Largest realtime client frame answered with an error event; frames up to twice this are read, bigger ones close the
   * socket (1009).
   */
  readonly maxFrameBytes?: number;
  /** Largest HTTP request body (413 above it). */
  readonly maxBodyBytes?: number;
  /** Concurrent realtime sessions plus in-flight HTTP completions. */
  readonly maxSessions?: number;
  /** Upper bound on max_tokens / max_output_tokens a client may ask for. */
  readonly maxResponseTokens?: number;
  /** Requests in the engine at once; more wait in line (maxQueuedRequests, maxQueueWaitMs), then get a 429. */
  readonly maxRunningRequests?: number;
  readonly maxQueuedRequests?: number;
  readonly maxQueueWaitMs?: number;
  /**
   * Per-stream buffer bound: audio bytes queued for one client (ours + the socket's). Above it the request
   * is paused (handle.pause()) until the client has read half of it.
   */
  readonly maxStreamBufferBytes?: number;
  /**
   * A response paused this long for its client (its stream buffer full all that time) fails with
   * CHORUS_ERR_CLIENT_TOO_SLOW and frees every stage (ClientStallWatch). Under the chunk timeout, so the client hears
   * the real reason; 0: never.
   */
  readonly clientStallTimeoutMs?: number;
  /**
   * Audio is only handed to the socket while its bufferedAmount is below this, so text never queues behind much audio.
   */
  readonly socketHighWaterBytes?: number;
  /** Input media one realtime session may hold: its audio buffer plus the audio and images of its items. */
  readonly maxInputAudioBytes?: number;
  /** Conversation items one realtime session may hold. */
  readonly maxConversationItems?: number;
  /** Text (UTF-8 bytes) the items of one realtime session may hold, as maxInputAudioBytes bounds their media. */
  readonly maxConversationTextBytes?: number;
  /**
   * Host header names the server answers to besides the loopback names and `host` (DNS rebinding: a page on a name
   * the attacker controls, resolved to this machine, sends its own name). '*' turns the check off (a proxy that
   * rewrites Host and checks it itself).
   */
  readonly allowedHosts?: readonly string[];
  /** A request's headers and body must both have arrived within this (slow or stalled uploads are cut: 408). */
  readonly requestTimeoutMs?: number;
  /** A request's headers must have arrived within this (slowloris). */
  readonly headersTimeoutMs?: number;
  /** A realtime session that sends no event for this long, with no response running, is closed (1001). */
  readonly wsIdleTimeoutMs?: number;
  /**
   * Voice turns (server_vad with create_response): start the answer when the VAD first hears the silence that may end
   * the turn, hold everything it produces in the server, and send it at speech_stopped (or drop it unheard if the
   * user goes on). Default true; false answers only at speech_stopped. Answers are the same either way.
   */
  readonly speculativeVoiceAnswers?: boolean;
  /** Model id shown by /v1/models and echoed in responses. Default: chorus-<config file name>. */
  readonly modelName?: string;
  /**
   * URL prefixes (`https://cdn.example.com/images/`) the server may fetch `image_url` media from. Empty by default:
   * remote URLs are refused (CHORUS_ERR_MEDIA_REMOTE_URL) because fetching whatever a client names would let it
   * reach internal addresses through the server (SSRF). Matching is by exact origin, then path prefix.
   */
  readonly mediaUrlAllowList?: readonly string[];
  /** A fetch from an allowed URL must complete within this, body included. */
  readonly mediaFetchTimeoutMs?: number;
  /** Largest media body fetched from an allowed URL. */
  readonly mediaFetchMaxBytes?: number;
  readonly logger?: Logger;
  /**
   * Where this server's root spans go. Default: the process's tracing, from the OTEL_* variables (docs/tracing.md);
   * null: none for this server.
   */
  readonly tracing?: Tracing | null;
  /**
   * The last traces, kept in memory for GET /v1/traces and the playground's waterfall (`chorus serve --trace-buffer
   * N`, traceSink.ts fills it); POST /v1/traces adds a remote stage's spans to it. Default: none (those routes say
   * how to turn it on).
   */
  readonly traceBuffer?: TraceBuffer | null;
}

export interface ResolvedServerOptions {
  readonly host: string;
  readonly port: number;
  /** The keys a request may present (empty: no key asked for). */
  readonly apiKeys: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly maxFrameBytes: number;
  readonly maxBodyBytes: number;
  readonly maxSessions: number;
  readonly maxResponseTokens: number;
  readonly maxRunningRequests: number;
  readonly maxQueuedRequests: number;
  readonly maxQueueWaitMs: number;
  readonly maxStreamBufferBytes: number;
  readonly clientStallTimeoutMs: number;
  readonly socketHighWaterBytes: number;
  readonly maxInputAudioBytes: number;
  readonly maxConversationItems: number;
  readonly maxConversationTextBytes: number;
  readonly allowedHosts: readonly string[];
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly wsIdleTimeoutMs: number;
  readonly speculativeVoiceAnswers: boolean;
  readonly modelName: string;
  readonly mediaUrlAllowList: readonly string[];
  readonly mediaFetchTimeoutMs: number;
  readonly mediaFetchMaxBytes: number;
}

const MiB = 1024 * 1024;

export function resolveServerOptions(opts: ServerOptions, defaultModelName: string): ResolvedServerOptions {
  const apiKey = opts.apiKey !== undefined ? opts.apiKey : (process.env.CHORUS_API_KEY ?? null);
  const apiKeys = (apiKey === null ? [] : typeof apiKey === 'string' ? [apiKey] : apiKey).filter((k) => k !== '');
  return Object.freeze({
    host: opts.host ?? '127.0.0.1',
    port: opts.port ?? 8000,
    apiKeys: Object.freeze([...new Set(apiKeys)]),
    allowedOrigins: Object.freeze([...(opts.allowedOrigins ?? [])]),
    maxFrameBytes: opts.maxFrameBytes ?? 16 * MiB, // OpenAI caps input_audio_buffer.append at 15 MiB
    maxBodyBytes: opts.maxBodyBytes ?? 16 * MiB,
    maxSessions: opts.maxSessions ?? 64,
    maxResponseTokens: opts.maxResponseTokens ?? 4096,
    maxRunningRequests: opts.maxRunningRequests ?? 32, // the stages batch up to 16 each; more only queues inside
    maxQueuedRequests: opts.maxQueuedRequests ?? 64,
    maxQueueWaitMs: opts.maxQueueWaitMs ?? 10_000, // 10 s
    maxStreamBufferBytes: opts.maxStreamBufferBytes ?? 2 * MiB, // ~32 s of 24 kHz pcm16 in base64
    // A client reading at playback speed empties half of that in ~16 s; a paused request's chunks time out at 30 s.
    clientStallTimeoutMs: opts.clientStallTimeoutMs ?? 20_000, // 20 s
    socketHighWaterBytes: opts.socketHighWaterBytes ?? 128 * 1024, // ~1 audio chunk of 25 frames
    maxInputAudioBytes: opts.maxInputAudioBytes ?? 16 * MiB, // ~5.8 min of 24 kHz pcm16
    maxConversationItems: opts.maxConversationItems ?? 1000,
    // 8 prompts of the largest context the byte bound allows (32768 positions x 16 bytes): history beyond what a
    // prompt takes is only kept for truncation to choose from.
    maxConversationTextBytes: opts.maxConversationTextBytes ?? 4 * MiB,
    allowedHosts: checkAllowedHosts(opts.allowedHosts ?? []),
    // A 16 MiB body at 8 Mbit/s takes 17 s; Node's default (300 s) let a stalled upload hold its socket for minutes.
    requestTimeoutMs: opts.requestTimeoutMs ?? 60_000, // 60 s
    headersTimeoutMs: opts.headersTimeoutMs ?? 10_000, // 10 s
    // Long enough for a user to think; short enough that 64 abandoned sessions do not hold every slot for good.
    wsIdleTimeoutMs: opts.wsIdleTimeoutMs ?? 600_000, // 10 min
    speculativeVoiceAnswers: opts.speculativeVoiceAnswers ?? true,
    modelName: opts.modelName ?? defaultModelName,
    mediaUrlAllowList: checkMediaUrlAllowList(opts.mediaUrlAllowList ?? []),
    mediaFetchTimeoutMs: opts.mediaFetchTimeoutMs ?? 10_000, // 10 s
    mediaFetchMaxBytes: opts.mediaFetchMaxBytes ?? 8 * MiB, // the engine's limit per media item (half a 16 MiB ring)
  });
}

/**
 * Each entry is a host name or address as a Host header carries it, without a port (`chorus.example.com`,
 * `10.0.0.5`, `[fd00::1]`), or '*'. A URL or a port here is a mistake that would silently allow nothing.
 */
export function checkAllowedHosts(entries: readonly string[]): readonly string[] {
  for (const entry of entries) {
    if (entry === '*' || /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$/.test(entry)) continue;
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `allowed host "${entry}" is not a host name or address without scheme or port (e.g. chorus.example.com, ` +
        `10.0.0.5, [fd00::1]), nor '*'`,
    );
  }
  return Object.freeze([...entries]);
}

/** Each entry must be an http(s) URL prefix: a typo would otherwise silently allow nothing. */
export function checkMediaUrlAllowList(entries: readonly string[]): readonly string[] {
  return Object.freeze(entries.map(checkAllowEntry));
}

function checkAllowEntry(entry: string): string {
  let url: URL | null = null;
  try {
    url = new URL(entry);
  } catch {
    // reported below
  }
  if (
    !url ||
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.username ||
    url.password ||
    url.search ||
    url.hash
  ) {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `media URL allow-list entry "${entry}" is not an http(s) URL prefix without credentials, query or fragment (e.g. https://cdn.example.com/images/)`,
    );
  }
  return entry;
}
