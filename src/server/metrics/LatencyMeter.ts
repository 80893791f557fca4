/**
 * Client-visible latency of one response: TTFT, TTFP, inter-token gaps and end to end, measured when the bytes are
 * handed to the socket (performance.now() clock), into the chorus_* histograms (a traced response's trace id as the
 * exemplar of its TTFT, TTFP and end-to-end buckets) and onto diagnostics_channel
 * (`chorus:<ws|http>:firstText|firstAudio`, for the bench and tracing, zero cost without subscribers).
 */
import { diagnostics } from '../../common/diagnostics.ts';
import { observeTraced } from './latencyMetrics.ts';
import { serverMetrics } from './metrics.ts';

export type Protocol = 'realtime' | 'http';

/**
 * One response's TTFT and TTFP as the server measured them (to the first delta handed to the socket), from the
 * point a client can time from too: the request's arrival, or for the automatic answer to a voice turn, the
 * speech_stopped the server sent. Null: no text (or audio) was sent.
 */
export interface ResponseLatency {
  readonly from: 'request' | 'speech_stopped';
  readonly ttft_ms: number | null;
  readonly ttfp_ms: number | null;
}

const channels = { realtime: diagnostics.realtime, http: diagnostics.http };

export class LatencyMeter {
  readonly #protocol: Protocol;
  readonly #startedAtMs: number;
  readonly #requestId: string;
  #lastTextAtMs: number | null = null;
  #firstTextAtMs: number | null = null;
  #firstAudioAtMs: number | null = null;
  #audioSeen = false;
  #onFirstPacket: { readonly audio: boolean; readonly fn: () => void } | null = null;

  /**
   * `turnEndedAtMs`: the voice turn this response answers was detected as ended then (chorus_voice_ttfp_seconds).
   * `traceId`: the response's trace (RequestHandle.traceId), the exemplar of its observations.
   */
  constructor(
    protocol: Protocol,
    requestId: string,
    startedAtMs: number,
    private readonly turnEndedAtMs: number | null = null,
    private readonly traceId?: string,
  ) {
    this.#protocol = protocol;
    this.#requestId = requestId;
    this.#startedAtMs = startedAtMs;
  }

  /**
   * Calls `fn` once, at the response's first packet: its first audio when `audio`, else its first text (admission's
   * running limit learns from it, RequestQueue.firstPacket).
   */
  onFirstPacket(audio: boolean, fn: () => void): this {
    this.#onFirstPacket = { audio, fn };
    return this;
  }

  text(): void {
    const now = performance.now();
    const labels = { protocol: this.#protocol };
    if (this.#lastTextAtMs === null) {
      this.#firstTextAtMs = now;
      const ttftMs = now - this.#startedAtMs;
      observeTraced(serverMetrics.ttftSeconds, this.#protocol, ttftMs / 1000, this.traceId);
      const ch = channels[this.#protocol].firstText;
      if (ch.hasSubscribers) ch.publish({ requestId: this.#requestId, ttftMs });
      if (this.#onFirstPacket?.audio === false) this.#onFirstPacket.fn();
    } else {
      serverMetrics.interTokenSeconds.observe(labels, (now - this.#lastTextAtMs) / 1000);
    }
    this.#lastTextAtMs = now;
  }

  /** The first audio was handed to the socket at `now` (default: now). */
  audio(now = performance.now()): void {
    if (this.#audioSeen) return;
    this.#audioSeen = true;
    this.#firstAudioAtMs = now;
    const ttfpMs = now - this.#startedAtMs;
    observeTraced(serverMetrics.ttfpSeconds, this.#protocol, ttfpMs / 1000, this.traceId);
    if (this.turnEndedAtMs !== null) serverMetrics.voiceTtfpSeconds.observe((now - this.turnEndedAtMs) / 1000);
    const ch = channels[this.#protocol].firstAudio;
    if (ch.hasSubscribers) ch.publish({ requestId: this.#requestId, ttfpMs });
    if (this.#onFirstPacket?.audio === true) this.#onFirstPacket.fn();
  }

  /** The response finished (stop or length) and its last bytes were handed to the socket. */
  finished(): void {
    const e2eSeconds = (performance.now() - this.#startedAtMs) / 1000;
    observeTraced(serverMetrics.e2eSeconds, this.#protocol, e2eSeconds, this.traceId);
  }

  latency(): ResponseLatency {
    const fromMs = this.turnEndedAtMs ?? this.#startedAtMs;
    const since = (atMs: number | null) => (atMs === null ? null : Math.round((atMs - fromMs) * 1000) / 1000);
    return {
      from: this.turnEndedAtMs === null ? 'request' : 'speech_stopped',
      ttft_ms: since(this.#firstTextAtMs),
      ttfp_ms: since(this.#firstAudioAtMs),
    };
  }
}
