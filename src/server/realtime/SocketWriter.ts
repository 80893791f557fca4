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
 */
import { laneOf, type ServerEvent } from './ServerEvent.ts';
import type { WebSocket } from 'ws';

export interface SocketWriterOptions {
  readonly maxStreamBufferBytes: number;
  readonly socketHighWaterBytes: number;
  readonly onPressure: (congested: boolean) => void;
}

interface Queued {
  readonly data: string;
  readonly onSent: ((handedAtMs: number) => void) | undefined;
}

export class SocketWriter {
  readonly #ws: WebSocket;
  readonly #options: SocketWriterOptions;
  #queue: Queued[] = [];
  #queueHead = 0;
  #queuedBytes = 0;
  #congested = false;

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

  get open(): boolean {
    return this.#ws.readyState === this.#ws.OPEN;
  }

  /**
   * Sends an event in its lane (laneOf): text-lane events go to the socket at once, audio-lane ones after the
   * audio queued before them. onSent runs once the event has been handed to the socket, given the moment just before
   * it was (performance.now()): a time the client cannot have received the event before, however late onSent runs.
   */
  send(event: ServerEvent, onSent?: (handedAtMs: number) => void): void {
    if (laneOf(event) === 'audio') return this.#enqueue(event, onSent);
    if (!this.open) return;
    const handedAtMs = onSent ? performance.now() : 0; // read only for an event that asks (the first audio)
    this.#ws.send(JSON.stringify(event), this.#afterWrite);
    onSent?.(handedAtMs);
  }

  #enqueue(event: ServerEvent, onSent?: (handedAtMs: number) => void): void {
    const data = JSON.stringify(event);
    this.#queue.push({ data, onSent });
    this.#queuedBytes += data.length;
    this.#drain();
    this.#checkPressure();
  }

  /** Drops everything not yet handed to the socket (a cancelled response's audio is never delivered). */
  discardQueued(): void {
    this.#queue = [];
    this.#queueHead = 0;
    this.#queuedBytes = 0;
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
      this.open &&
      this.#ws.bufferedAmount < this.#options.socketHighWaterBytes
    ) {
      const next = this.#queue[this.#queueHead++];
      this.#queuedBytes -= next.data.length;
      const handedAtMs = next.onSent ? performance.now() : 0;
      this.#ws.send(next.data, this.#afterWrite);
      next.onSent?.(handedAtMs);
    }
    // Compact now and then instead of shift() per item (O(n) each).
    if (this.#queueHead > 1024 || this.#queueHead === this.#queue.length) {
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
  }

  #checkPressure(): void {
    const pending = this.#queuedBytes + (this.open ? this.#ws.bufferedAmount : 0);
    if (!this.#congested && pending > this.#options.maxStreamBufferBytes) {
      this.#congested = true;
      this.#options.onPressure(true);
    } else if (this.#congested && pending <= this.#options.maxStreamBufferBytes / 2) {
      this.#congested = false;
      this.#options.onPressure(false);
    }
  }
}
