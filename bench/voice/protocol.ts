/**
 * Everything that crosses between the voice clients (VoiceClients.ts) and their process (clientProcess.ts), as one
 * discriminated union each way. The clients run in a process of their own so that, when the bench hosts the server,
 * streaming speech at real-time pace never runs on the event loop being measured.
 */
import type { ClientTarget } from '../ttfp/clients/BenchClient.ts';
import type { RequestTrace } from '../ttfp/trace.ts';

/** How a session is set up (the server: its baseUrl and apiKey). */
export interface TurnSettings extends ClientTarget {
  /** turn_detection.silence_duration_ms of the voice sessions. */
  readonly silenceMs: number;
  /** Audio answers of exactly this many text tokens (max_output_tokens with ignore_eos). */
  readonly outputLen: number;
  /** A turn that has not ended by then fails. */
  readonly timeoutMs: number;
  /**
   * Voice turns with the camera on (bench/video/cameraVoice.ts): JPEG frames sent as input_image items at this rate
   * from CAMERA_LEAD_MS before the speech until the answer ends. Absent or 0: no camera.
   */
  readonly cameraFps?: number;
}

export interface TurnSpec {
  /** Position in the run (the seed is seed + index). */
  readonly index: number;
  readonly seed: number;
  /** The sentence `wavFile` says. */
  readonly text: string;
  /** espeak-ng's WAV of `text`. */
  readonly wavFile: string;
  /**
   * Seeds the room noise around the speech. Unique per turn over the whole bench, so no two committed clips are
   * the same bytes and the audio encoder's cache (keyed by content) never answers for a measured turn.
   */
  readonly noiseSeed: number;
}

/**
 * One turn as the client saw it (performance.now() of the client process). `startMs` is when the user finished:
 * the send of the chunk holding the last sample of speech.
 */
export interface TurnTrace extends RequestTrace {
  /** input_audio_buffer.speech_stopped arrived. */
  readonly speechStoppedMs?: number;
  /** Where speech ends in the audio sent, and where the server's VAD says it ended (audio_end_ms). */
  readonly speechEndAudioMs?: number;
  readonly vadAudioEndMs?: number;
  /** How long the utterance is (without the room noise around it). */
  readonly speechMs?: number;
}

export type ToClients =
  | {
      readonly type: 'run';
      readonly runId: number;
      readonly concurrency: number;
      readonly settings: TurnSettings;
      readonly turns: readonly TurnSpec[];
    }
  | { readonly type: 'stop' };

export type FromClients =
  | { readonly type: 'ready' }
  | { readonly type: 'turn'; readonly runId: number; readonly ok: boolean }
  | { readonly type: 'run_done'; readonly runId: number; readonly traces: readonly TurnTrace[]; durationMs: number }
  | { readonly type: 'failed'; readonly runId: number | null; readonly message: string };
