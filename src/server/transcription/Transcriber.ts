/**
 * What the server asks of a speech-to-text model: Realtime input transcription and /v1/audio/transcriptions both
 * go through one Transcriber (null when the pipeline has none: both then say so, CHORUS_ERR_TRANSCRIPTION_UNAVAILABLE).
 */
import type { MediaPart } from '../media/mediaParts.ts';
import type { TranscriptionSetting } from '../realtime/transcriptionSetting.ts';

export interface Transcriber {
  /** What does the work, as session.updated reports it beside the model name the client asked for. */
  readonly name?: string;
  /**
   * The audio's transcript; `onDelta` gets its pieces in order as they are made (their concatenation is the
   * result). Rejects with a ChorusError; an aborted `signal` rejects with CHORUS_ERR_REQUEST_CANCELLED.
   */
  transcribe(
    audio: MediaPart,
    setting: TranscriptionSetting,
    signal: AbortSignal,
    onDelta: (text: string) => void,
  ): Promise<string>;
}
