/**
 * Input audio transcription of one Realtime session: each committed user audio item, while the session's
 * transcription setting is on, is transcribed beside the answer (never before it: the answer's request does not
 * wait for, or read, the transcript), and its events follow the item's: `.delta` per piece, then `.completed`, or
 * `.failed` with a CHORUS_ERR_* code (the pipeline has no speech-to-text, or the model failed). Closing the session
 * aborts what is still running. On a pipeline that hears speech as text (HeardTurns) the same transcription is the
 * user's turn, and the answer does wait for it.
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

  /**
   * Starts the transcription of the item's audio part `contentIndex` (0: a committed buffer is one input_audio
   * part). Resolves with the transcript, or null when it failed (its .failed event is out) or the session closed.
   */
  start(
    itemId: string,
    audio: MediaPart,
    setting: TranscriptionSetting,
    audioSeconds: number,
    contentIndex = 0,
  ): Promise<string | null> {
    const at = { itemId, contentIndex };
    if (!this.transcriber) {
      this.#failed(at, new ChorusError(ErrorCodes.TRANSCRIPTION_UNAVAILABLE, UNAVAILABLE));
      return Promise.resolve(null);
    }
    const abort = new AbortController();
    this.#aborts.add(abort);
    const onDelta = (delta: string) => {
      if (delta.length > 0)
        this.writer.send({
          type: 'conversation.item.input_audio_transcription.delta',
          event_id: newId('event'),
          item_id: itemId,
          content_index: contentIndex,
          delta,
        });
    };
    return this.transcriber
      .transcribe(audio, setting, abort.signal, onDelta)
      .then(
        (transcript) => {
          if (abort.signal.aborted) return null;
          this.writer.send({
            type: 'conversation.item.input_audio_transcription.completed',
            event_id: newId('event'),
            item_id: itemId,
            content_index: contentIndex,
            transcript,
            usage: { type: 'duration', seconds: Math.round(audioSeconds * 1000) / 1000 },
          });
          return transcript;
        },
        (err: unknown) => {
          if (!abort.signal.aborted) this.#failed(at, err);
          return null;
        },
      )
      .finally(() => this.#aborts.delete(abort));
  }

  #failed(at: { itemId: string; contentIndex: number }, err: unknown): void {
    const e =
      err instanceof ChorusError
        ? err
        : new ChorusError(ErrorCodes.TRANSCRIPTION_FAILED, 'the transcription failed (see the server log)', {
            cause: err,
          });
    this.writer.send({
      type: 'conversation.item.input_audio_transcription.failed',
      event_id: newId('event'),
      item_id: at.itemId,
      content_index: at.contentIndex,
      error: { type: 'transcription_error', code: e.code, message: e.message },
    });
  }

  close(): void {
    for (const abort of this.#aborts) abort.abort();
    this.#aborts.clear();
  }
}
