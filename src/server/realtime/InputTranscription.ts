/**
 * Input audio transcription of one Realtime session: each committed user audio item, while the session's
 * transcription setting is on, is transcribed beside the answer (never before it: the answer's request does not
 * wait for, or read, the transcript), and its events follow the item's: `.delta` per piece, then `.completed`, or
 * `.failed` with a CHORUS_ERR_* code (the pipeline has no speech-to-text, or the model failed). Closing the session
 * aborts what is still running.
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { MediaPart } from '../media/mediaParts.ts';
import type { Transcriber } from '../transcription/Transcriber.ts';
import { newId } from './serverEvents.ts';
import type { SocketWriter } from './SocketWriter.ts';
import type { TranscriptionSetting } from './transcriptionSetting.ts';

const UNAVAILABLE =
  'this pipeline has no speech-to-text model, so input audio is not transcribed (the answer is not affected): ' +
  'serve a config with an asr stage (configs/assistant.yaml), or set audio.input.transcription to null';

export class InputTranscription {
  readonly #aborts = new Set<AbortController>();

  constructor(
    private readonly transcriber: Transcriber | null,
    private readonly writer: Pick<SocketWriter, 'send'>,
  ) {}

  /** Starts the item's transcription (content_index 0: a committed buffer is one input_audio part). */
  start(itemId: string, audio: MediaPart, setting: TranscriptionSetting, audioSeconds: number): void {
    if (!this.transcriber) {
      this.#failed(itemId, new ChorusError(ErrorCodes.TRANSCRIPTION_UNAVAILABLE, UNAVAILABLE));
      return;
    }
    const abort = new AbortController();
    this.#aborts.add(abort);
    const onDelta = (delta: string) => {
      if (delta.length > 0) this.#send({ type: 'conversation.item.input_audio_transcription.delta', itemId, delta });
    };
    this.transcriber
      .transcribe(audio, setting, abort.signal, onDelta)
      .then(
        (transcript) => {
          if (abort.signal.aborted) return;
          this.writer.send({
            type: 'conversation.item.input_audio_transcription.completed',
            event_id: newId('event'),
            item_id: itemId,
            content_index: 0,
            transcript,
            usage: { type: 'duration', seconds: Math.round(audioSeconds * 1000) / 1000 },
          });
        },
        (err: unknown) => {
          if (!abort.signal.aborted) this.#failed(itemId, err);
        },
      )
      .finally(() => this.#aborts.delete(abort));
  }

  #send(e: { type: 'conversation.item.input_audio_transcription.delta'; itemId: string; delta: string }): void {
    this.writer.send({ type: e.type, event_id: newId('event'), item_id: e.itemId, content_index: 0, delta: e.delta });
  }

  #failed(itemId: string, err: unknown): void {
    const e =
      err instanceof ChorusError
        ? err
        : new ChorusError(ErrorCodes.TRANSCRIPTION_FAILED, 'the transcription failed (see the server log)', {
            cause: err,
          });
    this.writer.send({
      type: 'conversation.item.input_audio_transcription.failed',
      event_id: newId('event'),
      item_id: itemId,
      content_index: 0,
      error: { type: 'transcription_error', code: e.code, message: e.message },
    });
  }

  close(): void {
    for (const abort of this.#aborts) abort.abort();
    this.#aborts.clear();
  }
}
