/**
 * One client connection of the load generator. Each concurrency slot opens its own before the timed run (so
 * connection set-up is never inside TTFT) and sends its requests one after another on it.
 */
import type { RequestTrace } from '../trace.ts';

export interface BenchRequest {
  readonly prompt: string;
  /** Text tokens to generate; sent with ignore_eos so every answer has exactly this many. */
  readonly outputLen: number;
  readonly seed: number;
  /** The request fails (and is cancelled) if it has not ended by then. */
  readonly timeoutMs: number;
  /** Chorus extension: frames in the first Code2Wav chunk (default: the server's chunk policy). */
  readonly initialCodecChunkFrames?: number;
  /** Chorus extension: when the first audio packet should arrive (ms); the server picks the chunk schedule. */
  readonly ttfpTargetMs?: number;
}

/** The Chorus extension fields of a request, as both protocols spell them on the wire. */
export function chunkingFields(
  r: Pick<BenchRequest, 'initialCodecChunkFrames' | 'ttfpTargetMs'>,
): Record<string, number> {
  return {
    ...(r.initialCodecChunkFrames !== undefined ? { initial_codec_chunk_frames: r.initialCodecChunkFrames } : {}),
    ...(r.ttfpTargetMs !== undefined ? { ttfp_target_ms: r.ttfpTargetMs } : {}),
  };
}

export interface BenchClient {
  /** Never rejects: a failure is a trace with ok false, so one bad request does not end the run. */
  request(r: BenchRequest): Promise<RequestTrace>;
  close(): Promise<void>;
}

export interface ClientTarget {
  /** http://host:port */
  readonly baseUrl: string;
  readonly apiKey: string | null;
}

export type Protocol = 'realtime' | 'chat';

/** Samples in a base64 pcm16 string, from its length alone (decoding every delta would load the client). */
export function pcm16SamplesInBase64(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.floor(((b64.length / 4) * 3 - padding) / 2);
}
