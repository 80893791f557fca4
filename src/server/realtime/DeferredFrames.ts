/**
 * Camera frames that arrive while a turn is being spoken (server VAD) or its answer is held. Added at once, such a
 * frame would go before the turn's audio item, so every position of the speech prefilled so far would be computed
 * again, and while the turn's answer is held (the VAD waits out the silence) it would change the prompt the answer was
 * started with and discard it. So it waits for the turn to end: it is added after the answer's item (the answer sees
 * the camera up to the moment the user began to speak; the next one sees the rest), or, with no answer, at the next
 * event after the commit. Any event but audio also drops a held answer, so it adds them too (once no turn is spoken).
 */
import type { ClientEvent, ClientEventOf } from './clientEvents.ts';
import { isFrameEvent } from './CameraFrames.ts';

type ItemCreate = ClientEventOf<'conversation.item.create'>;

export class DeferredFrames {
  readonly #frames: ItemCreate[] = [];
  /** A turn is being spoken or its answer is held: frames wait. */
  readonly #inTurn: () => boolean;

  constructor(inTurn: () => boolean) {
    this.#inTurn = inTurn;
  }

  /** Whether `event` is a frame that must wait (it is kept, to be added by the caller once taken). */
  defer(event: ClientEvent): boolean {
    if (!this.#inTurn() || !isFrameEvent(event)) return false;
    this.#frames.push(event as ItemCreate);
    return true;
  }

  /** The frames that waited, in arrival order, once no turn holds them (none while one does). */
  take(): ItemCreate[] {
    return this.#inTurn() ? [] : this.#frames.splice(0);
  }

  clear(): void {
    this.#frames.length = 0;
  }
}
