/**
 * Speech in for a Thinker that hears text only (no audio encoder) on a pipeline with speech-to-text (YAML `asr:`):
 * every heard audio part (MediaChecker.heard) of a user item, committed or created, is transcribed, and its transcript
 * becomes the part's text, which is what the Thinker gets (Conversation's toChatMessages). The transcription events
 * (.delta, .completed, .failed) are sent whatever the session's transcription setting, since the transcript is the
 * turn: the client sees what was heard. A response waits until the transcripts of the items before it are in
 * (`afterHearing`); one that fails leaves its part empty, and a turn with nothing heard is not answered.
 */
import { probeAudio } from '../../media/probeMedia.ts';
import { ClientInputError } from '../validate.ts';
import { ErrorCodes } from '../../common/errors.ts';
import type { ConversationItem } from './clientEvents.ts';
import type { Conversation, StoredItem } from './Conversation.ts';
import type { InputTranscription } from './InputTranscription.ts';
import type { TranscriptionSetting } from './transcriptionSetting.ts';

/** What a session without a transcription setting asks of the speech-to-text (its own language, no prompt). */
const DEFAULT_SETTING: TranscriptionSetting = { model: 'whisper-1', language: null, prompt: null };

export class HeardTurns {
  readonly #pending = new Set<Promise<void>>();
  /** A response waits for transcripts: whether a client asked for it (a second one is refused) or a voice turn did. */
  #waiting: { byClient: boolean; dropped: boolean } | null = null;

  constructor(
    private readonly transcription: InputTranscription,
    private readonly conversation: Conversation,
  ) {}

  /**
   * response.input is the response's own list, never in the conversation and never transcribed: its audio would not
   * be heard, so it is refused by name rather than left out.
   */
  checkInput(input: readonly ConversationItem[] | undefined): void {
    input?.forEach((item, i) => {
      const at = item.type === 'message' ? item.content.findIndex((p) => p.type === 'input_audio') : -1;
      if (at >= 0)
        throw new ClientInputError(
          `response.input[${i}].content[${at}]: this pipeline hears speech through its speech-to-text, which ` +
            "transcribes the conversation's items only: add the audio with conversation.item.create, or send its text",
          `response.input[${i}].content[${at}]`,
          ErrorCodes.PARAM_UNSUPPORTED,
        );
    });
  }

  /** Starts the transcription of the item's heard audio parts, if it has any. */
  hear(item: StoredItem, setting: TranscriptionSetting | null): void {
    item.parts.forEach((part, index) => {
      if (!part.heard || part.media?.type !== 'audio') return;
      const { data, format, sampleRateHz } = part.media;
      const { seconds } = probeAudio(data, format, { pcm16RateHz: sampleRateHz });
      const done = this.transcription
        .start(item.id, part.media, setting ?? DEFAULT_SETTING, seconds, index)
        .then((transcript) => {
          if (transcript !== null) this.conversation.setHeard(item.id, index, transcript);
        })
        .finally(() => this.#pending.delete(done));
      this.#pending.add(done);
    });
  }

  /**
   * Runs `create` now when no transcript is being made, else once they all are (errors then go to `fail`). A
   * client's second response.create while one waits is refused as one during a response is; a voice turn's joins
   * the waiting one (it will answer both turns).
   */
  afterHearing(create: () => void, fail: (err: unknown) => void, byClient: boolean): void {
    if (this.#pending.size === 0 && !this.#waiting) return create();
    if (this.#waiting) {
      if (!byClient) return;
      throw new ClientInputError(
        "a response is waiting for the transcript of the user's audio: cancel it (response.cancel) or wait for its " +
          'response.done',
        null,
        ErrorCodes.RESPONSE_ACTIVE,
      );
    }
    const waiting = { byClient, dropped: false };
    this.#waiting = waiting;
    void this.#settled().then(() => {
      if (this.#waiting === waiting) this.#waiting = null;
      if (waiting.dropped) return;
      try {
        create();
      } catch (err) {
        fail(err);
      }
    });
  }

  /** response.cancel before the response started: it never will. False when none is waiting. */
  dropWaiting(): boolean {
    if (!this.#waiting) return false;
    this.#waiting.dropped = true;
    this.#waiting = null;
    return true;
  }

  /** Until no transcript is being made (one started while waiting is waited for too). */
  async #settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  /** The session closed: nothing waiting starts (InputTranscription.close aborts the transcriptions). */
  close(): void {
    this.dropWaiting();
  }
}
