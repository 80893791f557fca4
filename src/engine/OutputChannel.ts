/**
 * A request's output events for its consumers, without keeping them. Events emitted before anyone subscribes are
 * held (generate() returns before the caller subscribes) and handed to the first subscriber; after that, events
 * go straight through and are let go. A later subscriber gets what the protocol still needs: the live events from
 * then on, and the `done` event (with usage) if the request has already ended. So a 10-minute answer's audio is
 * not kept in main for its whole length, as a replay of everything would.
 */
import { Observable, Subject } from 'rxjs';
import type { OutputEvent } from '../common/engine.ts';

export class OutputChannel {
  readonly #live = new Subject<OutputEvent>();
  /** Held until the first subscriber; null once someone has subscribed. */
  #early: OutputEvent[] | null = [];
  #done: OutputEvent | null = null;

  readonly events: Observable<OutputEvent> = new Observable<OutputEvent>((subscriber) => {
    const early = this.#early;
    this.#early = null;
    for (const e of early ?? []) subscriber.next(e);
    if (this.#done) {
      if (!early) subscriber.next(this.#done); // a late subscriber still learns how the request ended
      subscriber.complete();
      return;
    }
    return this.#live.subscribe(subscriber);
  });

  /** Events held for a first subscriber that has not come yet (0 once anyone subscribed). */
  get heldEvents(): number {
    return this.#early?.length ?? 0;
  }

  next(event: OutputEvent): void {
    if (event.type === 'done') this.#done = event;
    if (this.#early) this.#early.push(event);
    else this.#live.next(event);
    if (event.type === 'done') this.#live.complete();
  }
}
