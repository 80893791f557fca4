/**
 * SocketWriter against a fake socket whose buffer drains only when the test says so: text bypasses queued
 * audio, audio is handed over only under the high-water mark, pressure toggles with hysteresis.
 */
import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { SocketWriter } from '../../src/server/realtime/SocketWriter.ts';

class FakeSocket {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: string[] = [];
  readonly #pending: { bytes: number; cb: (err?: Error) => void }[] = [];

  send(data: string, cb: (err?: Error) => void): void {
    this.sent.push(data);
    this.bufferedAmount += data.length;
    this.#pending.push({ bytes: data.length, cb });
  }

  /** The kernel takes the oldest write: its bytes leave the buffer and its callback runs. */
  flushOne(): boolean {
    const w = this.#pending.shift();
    if (!w) return false;
    this.bufferedAmount -= w.bytes;
    w.cb();
    return true;
  }
}

const event = (type: string, size = 0) => ({ type, pad: 'x'.repeat(size) });
const types = (s: FakeSocket) => s.sent.map((d) => (JSON.parse(d) as { type: string }).type);

describe('SocketWriter', () => {
  it('queues audio above the high-water mark while text goes straight out', () => {
    const socket = new FakeSocket();
    const writer = new SocketWriter(socket as unknown as WebSocket, { maxStreamBufferBytes: 1 << 20, socketHighWaterBytes: 1000, onPressure: () => {} });
    writer.enqueue(event('a1', 1500)); // goes out: buffer was empty
    writer.enqueue(event('a2', 100)); // waits: buffer over the mark
    writer.sendNow(event('t1'));
    expect(types(socket)).toEqual(['a1', 't1']);
    expect(writer.queuedBytes).toBeGreaterThan(100);
    socket.flushOne(); // a1 written: under the mark again
    expect(types(socket)).toEqual(['a1', 't1', 'a2']);
    expect(writer.queuedBytes).toBe(0);
  });

  it('reports pressure above the bound and relief at half of it, once each', () => {
    const socket = new FakeSocket();
    const changes: boolean[] = [];
    const writer = new SocketWriter(socket as unknown as WebSocket, { maxStreamBufferBytes: 10_000, socketHighWaterBytes: 1000, onPressure: (c) => changes.push(c) });
    for (let i = 0; i < 20; i++) writer.enqueue(event(`a${i}`, 990));
    expect(changes).toEqual([true]);
    expect(writer.congested).toBe(true);
    while (writer.queuedBytes + socket.bufferedAmount > 5000) expect(socket.flushOne()).toBe(true);
    expect(changes).toEqual([true, false]);
    while (socket.flushOne());
    expect(types(socket)).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
    expect(changes).toEqual([true, false]);
  });

  it('runs onSent in order and drops the queue on discard', () => {
    const socket = new FakeSocket();
    const sentOrder: string[] = [];
    const writer = new SocketWriter(socket as unknown as WebSocket, { maxStreamBufferBytes: 1 << 20, socketHighWaterBytes: 10, onPressure: () => {} });
    writer.enqueue(event('a1', 50), () => sentOrder.push('a1'));
    writer.enqueue(event('a2', 50), () => sentOrder.push('a2'));
    writer.enqueue(event('a3', 50), () => sentOrder.push('a3'));
    expect(sentOrder).toEqual(['a1']);
    writer.discardQueued();
    writer.enqueue(event('done'), () => sentOrder.push('done'));
    while (socket.flushOne());
    expect(sentOrder).toEqual(['a1', 'done']);
    expect(types(socket)).toEqual(['a1', 'done']);
  });

  it('sends nothing once the socket is closed', () => {
    const socket = new FakeSocket();
    const writer = new SocketWriter(socket as unknown as WebSocket, { maxStreamBufferBytes: 1 << 20, socketHighWaterBytes: 1000, onPressure: () => {} });
    socket.readyState = 3;
    writer.sendNow(event('t'));
    writer.enqueue(event('a'));
    expect(socket.sent).toEqual([]);
  });
});
