/**
 * Writes server events to one WebSocket in two lanes, so a client that reads audio slowly never delays text:
 *
 * - the text lane: control events and text deltas go straight to the socket.
 * - the audio lane: audio deltas, and the events that must follow the audio (output_audio.done ... response.done),
 *   wait in an ordered queue and are handed to the socket only while its bufferedAmount is under
 *   socketHighWaterBytes. Text sent later therefore overtakes queued audio, and waits behind at most
 *   socketHighWaterBytes of it.
 *
 * Memory stays bounded by pushing back on the producer instead of growing the queue: when queued bytes plus
 * the socket's buffer exceed maxStreamBufferBytes, onPressure(true) fires (the response pauses its request);
 * when they fall to half of that, onPressure(false) resumes it. Draining is driven by ws send callbacks (each
 * fires when its bytes reach the kernel), never by a timer.
 *
 * A resumable session (docs/realtime-resume.md) numbers what it hands over and keeps it (ReplayLog); while it has no
 * socket (detach() to attach()), every event, text too, waits in the queue in the order it was made, and text stays
 * behind queued text after that, so no text event ever overtakes an earlier one.
 */
import { eventJson, laneOf, type ServerEvent } from './ServerEvent.ts';
import type { WebSocket } from 'ws';
import type { LoggedEvent, ReplayLog } from './ReplayLog.ts';

export interface SocketWriterOptions {
  readonly maxStreamBufferBytes: number;
  readonly socketHighWaterBytes: number;
  readonly onPressure: (congested: boolean) => void;
}

interface Queued {
  readonly data: string;
  readonly lane: 'text' | 'audio';
  readonly onSent: ((handedAtMs: number) => void) | undefined;
}

export class SocketWriter {
  #ws: WebSocket | null;
  readonly #options: SocketWriterOptions;
  #queue: Queued[] = [];
  #queueHead = 0;
  #queuedBytes = 0;
  /** Text-lane events in the queue (made while detached): later text waits behind them. */
  #queuedText = 0;
  #congested = false;
  /** Set once the session is resumable: every event handed over is numbered and kept. */
  #log: ReplayLog | null = null;
  /** The session is over: nothing more is sent or kept. */
  #ended = false;

  constructor(ws: WebSocket, options: SocketWriterOptions) {
    this.#ws = ws;
    this.#options = options;
  }

  get congested(): boolean {
    return this.#congested;
  }

  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** Events sent now will reach the client: its socket is open, or the session waits for it to resume. */
  get open(): boolean {
    if (this.#ended) return false;
    return this.#log !== null || this.#socketOpen;
  }

  get #socketOpen(): boolean {
    return this.#ws !== null && this.#ws.readyState === this.#ws.OPEN;
  }

  /** From now on every event handed over is numbered (chorus_seq) and kept in `log` for a resume. */
  numberWith(log: ReplayLog): void {
    this.#log = log;
  }

  /**
   * Sends an event in its lane (laneOf): text-lane events go to the socket at once, audio-lane ones after the
   * audio queued before them. onSent runs once the event has been handed to the socket, given the moment just before
   * it was (performance.now()): a time the client cannot have received the event before, however late onSent runs.
   */
  send(event: ServerEvent, onSent?: (handedAtMs: number) => void): void {
    if (this.#ended) return;
    const lane = laneOf(event);
    if (lane === 'text' && this.#queuedText === 0 && this.#socketOpen) {
      return this.#hand(eventJson(event), onSent);
    }
    // A text event with no socket to take it: dropped, unless the session may resume (then it waits its turn).
    if (lane === 'text' && this.#log === null) return;
    this.#enqueue(eventJson(event), lane, onSent);
  }

  /** The socket is gone; events queue (numbered as they leave) until attach() gives the session a new one. */
  detach(): void {
    this.#ws = null;
  }

  /**
   * A resumed client's socket: `replay` (the events it missed, already numbered) goes first, then the queue.
   */
  attach(ws: WebSocket, replay: readonly LoggedEvent[]): void {
    this.#ws = ws;
    for (const e of replay) ws.send(e.data, this.#afterWrite);
    this.#drain();
    this.#checkPressure();
  }

  #hand(data: string, onSent: ((handedAtMs: number) => void) | undefined): void {
    const handedAtMs = onSent ? performance.now() : 0; // read only for an event that asks (the first audio)
    this.#ws!.send(this.#log ? this.#log.append(data) : data, this.#afterWrite);
    onSent?.(handedAtMs);
  }

  #enqueue(data: string, lane: 'text' | 'audio', onSent?: (handedAtMs: number) => void): void {
    this.#queue.push({ data, lane, onSent });
    this.#queuedBytes += data.length;
    if (lane === 'text') this.#queuedText++;
    this.#drain();
    this.#checkPressure();
  }

  /**
   * Drops the audio not yet handed to the socket (a cancelled response's audio is never delivered). Text made while
   * detached stays: it is the record of what happened, and a resumed client is owed it.
   */
  discardQueued(): void {
    const kept = this.#queue.slice(this.#queueHead).filter((q) => q.lane === 'text');
    this.#queue = kept;
    this.#queueHead = 0;
    this.#queuedBytes = kept.reduce((n, q) => n + q.data.length, 0);
    this.#queuedText = kept.length;
    this.#checkPressure();
  }

  /** The session is over: everything queued is dropped and nothing more is sent. */
  end(): void {
    this.#ended = true;
    this.#ws = null;
    this.#queue = [];
    this.#queueHead = 0;
    this.#queuedBytes = 0;
    this.#queuedText = 0;
    this.#checkPressure();
  }

  readonly #afterWrite = (err?: Error): void => {
    if (err) return; // the socket is going away; its close handler tidies up
    this.#drain();
    this.#checkPressure();
  };

  #drain(): void {
    while (
      this.#queueHead < this.#queue.length &&
      this.#socketOpen &&
      this.#ws!.bufferedAmount < this.#options.socketHighWaterBytes
    ) {
      const next = this.#queue[this.#queueHead++];
      this.#queuedBytes -= next.data.length;
      if (next.lane === 'text') this.#queuedText--;
      this.#hand(next.data, next.onSent);
    }
    // Compact now and then instead of shift() per item (O(n) each).
    if (this.#queueHead > 1024 || this.#queueHead === this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
  }

  #checkPressure(): void {
    const pending = this.#queuedBytes + (this.#socketOpen ? this.#ws!.bufferedAmount : 0);
    if (!this.#congested && pending > this.#options.maxStreamBufferBytes) {
      this.#congested = true;
      this.#options.onPressure(true);
    } else if (this.#congested && pending <= this.#options.maxStreamBufferBytes / 2) {
      this.#congested = false;
      this.#options.onPressure(false);
    }
  }
}
