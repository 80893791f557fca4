/**
 * The input_audio_buffer.* events on a session's buffer (InputAudio): appended audio is checked and counted against
 * the conversation's media budget as it arrives, a commit moves those bytes to the item it makes (so they are not
 * counted twice), and a clear releases them.
 */
import { ErrorCodes } from '../../common/errors.ts';
import type { MediaPart } from '../media/mediaParts.ts';
import { decodeBase64Strict } from '../pcm.ts';
import { ClientInputError } from '../validate.ts';
import type { Conversation } from './Conversation.ts';
import { InputAudio } from './InputAudio.ts';

export class InputAudioBuffer {
  /** The bytes themselves (the voice turn and the answer rendered before a commit read them as views). */
  readonly audio = new InputAudio();
  readonly #conversation: Conversation;

  constructor(conversation: Conversation) {
    this.#conversation = conversation;
  }

  /** input_audio_buffer.append: the decoded pcm16, appended and reserved against the conversation's media bytes. */
  append(base64: string): Buffer {
    const audio = decodeBase64Strict(base64);
    if (audio === null) {
      throw new ClientInputError(
        'audio must be base64 of pcm16 (24 kHz mono, little-endian)',
        'audio',
        ErrorCodes.MEDIA_INVALID,
      );
    }
    this.#conversation.reserveMedia(audio.length);
    this.audio.append(audio);
    return audio;
  }

  /**
   * A commit: the buffer as the media of the item it makes (`clipEndMs`, server_vad: up to there on the VAD's
   * timeline; the rest is dropped), and the buffer emptied. It is emptied before the caller checks the media: a buffer
   * the pipeline cannot use (no audio encoder, under 10 ms) would otherwise make every later commit fail the same way.
   */
  take(clipEndMs?: number): MediaPart {
    if (this.audio.bytes === 0)
      throw new ClientInputError('the input audio buffer is empty: append audio before committing');
    if (this.audio.bytes % 2 !== 0) {
      throw new ClientInputError(
        'the input audio buffer holds an odd number of bytes: pcm16 needs whole samples',
        null,
        ErrorCodes.MEDIA_INVALID,
      );
    }
    const media = this.audio.media(clipEndMs === undefined ? this.audio.bytes : this.audio.bytesUntil(clipEndMs));
    this.clear();
    return media;
  }

  /** input_audio_buffer.clear (and a commit, and the session's end): the bytes leave the media budget. */
  clear(): void {
    this.#conversation.releaseMedia(this.audio.bytes);
    this.audio.clear();
  }
}
