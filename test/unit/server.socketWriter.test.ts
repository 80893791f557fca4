/**
 * SocketWriter against a fake socket whose buffer drains only when the test says so: text bypasses queued
 * audio, audio is handed over only under the high-water mark, pressure toggles with hysteresis.
 */
import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { laneOf, type ServerEvent } from '../../src/server/realtime/ServerEvent.ts';
import { SocketWriter } from '../../src/server/realtime/SocketWriter.ts';

class FakeSocket {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: string[] = [];
  /** When each send was called (performance.now()). */
  readonly sentAtMs: number[] = [];
  readonly #pending: { bytes: number; cb: (err?: Error) => void }[] = [];

  send(data: string, cb: (err?: Error) => void): void {
    this.sent.push(data);
    this.sentAtMs.push(performance.now());
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

const ref = { response_id: 'resp_1', item_id: 'item_1', output_index: 0, content_index: 0 };
/** An audio delta (audio lane) named by its event_id, `size` bytes of payload. */
const audio = (name: string, size = 0): ServerEvent => ({
  type: 'response.output_audio.delta',
  event_id: name,
  ...ref,
  delta: 'x'.repeat(size),
});
/** A text delta (text lane). */
const text = (name: string): ServerEvent => ({
  type: 'response.output_text.delta',
  event_id: name,
  ...ref,
  delta: 'hi',
});
const names = (s: FakeSocket) => s.sent.map((d) => (JSON.parse(d) as { event_id: string }).event_id);

describe('SocketWriter', () => {
  it('queues audio above the high-water mark while text goes straight out', () => {
    const socket = new FakeSocket();
    const writer = new SocketWriter(socket as unknown as WebSocket, {
      maxStreamBufferBytes: 1 << 20,
      socketHighWaterBytes: 1000,
      onPressure: () => {},
    });
    writer.send(audio('a1', 1500)); // goes out: buffer was empty
    writer.send(audio('a2', 100)); // waits: buffer over the mark
    writer.send(text('t1'));
    expect(names(socket)).toEqual(['a1', 't1']);
    expect(writer.queuedBytes).toBeGreaterThan(100);
    socket.flushOne(); // a1 written: under the mark again
    expect(names(socket)).toEqual(['a1', 't1', 'a2']);
    expect(writer.queuedBytes).toBe(0);
  });

  it('reports pressure above the bound and relief at half of it, once each', () => {
    const socket = new FakeSocket();
    const changes: boolean[] = [];
    const writer = new SocketWriter(socket as unknown as WebSocket, {
      maxStreamBufferBytes: 10_000,
      socketHighWaterBytes: 1000,
      onPressure: (c) => changes.push(c),
    });
    for (let i = 0; i < 20; i++) writer.send(audio(`a${i}`, 990));
    expect(changes).toEqual([true]);
    expect(writer.congested).toBe(true);
    while (writer.queuedBytes + socket.bufferedAmount > 5000) expect(socket.flushOne()).toBe(true);
    expect(changes).toEqual([true, false]);
    while (socket.flushOne());
    expect(names(socket)).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
    expect(changes).toEqual([true, false]);
  });

  it('runs onSent in order and drops the queue on discard', () => {
    const socket = new FakeSocket();
    const sentOrder: string[] = [];
    const writer = new SocketWriter(socket as unknown as WebSocket, {
      maxStreamBufferBytes: 1 << 20,
      socketHighWaterBytes: 10,
      onPressure: () => {},
    });
    writer.send(audio('a1', 50), () => sentOrder.push('a1'));
    writer.send(audio('a2', 50), () => sentOrder.push('a2'));
    writer.send(audio('a3', 50), () => sentOrder.push('a3'));
    expect(sentOrder).toEqual(['a1']);
    writer.discardQueued();
    writer.send(audio('done'), () => sentOrder.push('done'));
    while (socket.flushOne());
    expect(sentOrder).toEqual(['a1', 'done']);
    expect(names(socket)).toEqual(['a1', 'done']);
  });

  it("gives onSent a moment before the socket's send (a client cannot have the event earlier)", () => {
    const socket = new FakeSocket();
    const handed: number[] = [];
    const writer = new SocketWriter(socket as unknown as WebSocket, {
      maxStreamBufferBytes: 1 << 20,
      socketHighWaterBytes: 10,
      onPressure: () => {},
    });
    writer.send(text('t1'), (at) => handed.push(at));
    writer.send(audio('a1', 50), (at) => handed.push(at));
    writer.send(audio('a2', 50), (at) => handed.push(at)); // queued: handed over when the socket drains
    const queuedAt = performance.now();
    while (socket.flushOne());
    expect(handed).toHaveLength(3);
    for (const [i, at] of handed.entries()) expect(at).toBeLessThanOrEqual(socket.sentAtMs[i]);
    expect(handed[2]).toBeGreaterThanOrEqual(queuedAt); // the moment it was handed over, not queued
  });

  it('sends nothing once the socket is closed', () => {
    const socket = new FakeSocket();
    const writer = new SocketWriter(socket as unknown as WebSocket, {
      maxStreamBufferBytes: 1 << 20,
      socketHighWaterBytes: 1000,
      onPressure: () => {},
    });
    socket.readyState = 3;
    writer.send(text('t'));
    writer.send(audio('a'));
    expect(socket.sent).toEqual([]);
  });

  it('puts each event in its lane by type: closers of a spoken answer follow its audio, a user item does not', () => {
    const item = (role: 'user' | 'assistant'): ServerEvent => ({
      type: 'conversation.item.done',
      event_id: 'e',
      previous_item_id: null,
      item: { id: 'i', object: 'realtime.item', type: 'message', role, status: 'completed', content: [] },
    });
    expect(laneOf(item('assistant'))).toBe('audio');
    expect(laneOf(item('user'))).toBe('text');
    expect(laneOf(text('t'))).toBe('text');
    expect(laneOf({ type: 'response.output_audio.done', event_id: 'e', ...ref })).toBe('audio');
    expect(laneOf({ type: 'input_audio_buffer.cleared', event_id: 'e' })).toBe('text');
  });
});
