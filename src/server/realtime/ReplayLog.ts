/**
 * The server events a resumable session has handed to its socket, numbered in the order they went out (chorus_seq),
 * and the last `maxBytes` of them kept for replay (session.resume, docs/realtime-resume.md).
 *
 * Numbers are given on the wire's order, not on the order events were made: the audio lane lets text overtake queued
 * audio (SocketWriter), so only the order of hand-over makes "the client has every event up to last_seq" true.
 * Nothing here knows about sockets: it is a bounded list with a cursor, tested alone.
 */
export interface LoggedEvent {
  readonly seq: number;
  /** The event's JSON, chorus_seq included. */
  readonly data: string;
}

/** What a client that has seen every event up to some seq is owed (ReplayLog.since). */
export type Replay =
  | { readonly kind: 'events'; readonly events: readonly LoggedEvent[] }
  /** Events after that seq have been dropped from the log: the client cannot be given them. */
  | { readonly kind: 'gap'; readonly oldestSeq: number }
  /** The client claims events the server never sent. */
  | { readonly kind: 'ahead'; readonly lastSeq: number };

export class ReplayLog {
  readonly #maxBytes: number;
  #entries: LoggedEvent[] = [];
  #head = 0;
  #bytes = 0;
  #lastSeq = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** The seq of the last event numbered (0: none yet). */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /**
   * Numbers an event about to be handed to the socket and keeps it. `json` is its JSON object text; the returned
   * text is what goes on the wire (chorus_seq first, so a client sees it before the rest of a long delta).
   */
  append(json: string): string {
    const seq = ++this.#lastSeq;
    const data = `{"chorus_seq":${seq},${json.slice(1)}`;
    this.#entries.push({ seq, data });
    this.#bytes += data.length;
    // The oldest go first; the newest is always kept, however large (a client a whole event behind can resume).
    while (this.#bytes > this.#maxBytes && this.#entries.length - this.#head > 1) {
      this.#bytes -= this.#entries[this.#head++].data.length;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
    return data;
  }

  /** The events after `lastSeq`, in order: what a client that saw everything up to it has missed. */
  since(lastSeq: number): Replay {
    if (lastSeq > this.#lastSeq) return { kind: 'ahead', lastSeq: this.#lastSeq };
    if (lastSeq === this.#lastSeq) return { kind: 'events', events: [] };
    const oldestSeq = this.#entries.length > this.#head ? this.#entries[this.#head].seq : this.#lastSeq + 1;
    if (lastSeq + 1 < oldestSeq) return { kind: 'gap', oldestSeq };
    const from = this.#head + (lastSeq + 1 - oldestSeq);
    return { kind: 'events', events: this.#entries.slice(from) };
  }

  /** Bytes of events held (for tests and the bound). */
  get bytes(): number {
    return this.#bytes;
  }
}
