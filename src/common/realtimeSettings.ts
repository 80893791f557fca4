/**
 * The stage graph's settings of Realtime sessions and of the voice around them (YAML `realtime:` and `asr:`): session
 * resume, camera frames, semantic_vad's end-of-turn model and the pipeline's speech-to-text.
 */

export interface RealtimeResumeSettings {
  readonly windowMs: number;
  readonly bufferBytes: number;
}

/** YAML `realtime:` left out (and graphs not loaded from YAML). */
export const DEFAULT_REALTIME_RESUME: RealtimeResumeSettings = Object.freeze({
  windowMs: 30_000, // 30 s: a phone changing networks is back within seconds
  bufferBytes: 4 * 1024 * 1024, // 4 MiB: ~1 min of 24 kHz audio as base64 pcm16
});

/** Camera frames in a Realtime session (YAML `realtime.camera`, docs/video.md#camera-frames-in-a-conversation). */
export interface CameraSettings {
  /** Frames a session keeps: past this, the oldest frame's item is deleted (conversation.item.deleted). */
  readonly maxFrames: number;
  /**
   * A frame whose thumbnail (16 x 16 box-averaged luma) differs from the last kept frame's by less than this mean
   * absolute difference, as a fraction of full scale, is a near-duplicate: it is skipped (its item deleted).
   * 0: every frame is kept.
   */
  readonly duplicateThreshold: number;
}

export const DEFAULT_CAMERA: CameraSettings = Object.freeze({
  maxFrames: 8, // 8 s of camera at one frame a second
  duplicateThreshold: 0.02, // 2% of full scale: a still scene's sensor noise stays under it, a hand moving does not
});

/**
 * Realtime session.truncation "auto" lets a conversation's items fill at most this many positions after the
 * instructions (YAML realtime.auto_truncation_positions; docs/conversations.md "A bounded window"): each answer step
 * attends over the whole context, so a bounded one keeps late turns as fast as early ones. A session that wants the
 * model's whole context asks for it with retention_ratio.
 */
export const DEFAULT_AUTO_TRUNCATION_POSITIONS = 2048;

/**
 * The pipeline's speech-to-text (YAML `asr:`): Whisper in a CTranslate2 folder (faster-whisper's layout), given as a
 * path or as a folder inside an installed Python package. It transcribes input audio for Realtime input transcription
 * and /v1/audio/transcriptions, in a process of its own beside the stages.
 */
export interface AsrSpec {
  readonly model: { readonly path: string } | { readonly pythonPackage: string; readonly dir: string };
  readonly threads: number;
}

/**
 * Realtime `semantic_vad` (docs/voice.md#semantic_vad): the end-of-turn model's ONNX file (Smart Turn v3), null when
 * there is none; and what semantic_vad does then: refuse (a session.update asking for it gets a 400 naming the fix)
 * or silence (the VAD's silence rule, as server_vad, said so in session.updated).
 */
export interface SemanticVadSpec {
  readonly modelPath: string | null;
  readonly fallback: 'refuse' | 'silence';
}
