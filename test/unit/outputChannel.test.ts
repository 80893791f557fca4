/** OutputChannel: what a request's consumers get, and that delivered events are not kept. */
import { describe, expect, it } from 'vitest';
import type { OutputEvent } from '../../src/common/engine.ts';
import { OutputChannel } from '../../src/engine/OutputChannel.ts';

const text = (delta: string): OutputEvent => ({ type: 'text', delta, tokenIds: [1], atMs: 0 });
const done: OutputEvent = {
  type: 'done',
  finishReason: 'stop',
  usage: {
    promptTokens: 1,
    promptTokenDetails: { text: 1, audio: 0, image: 0, video: 0 },
    completionTokens: 3,
    audioFrames: 0,
    audioSeconds: 0,
  },
  atMs: 0,
};
const record = (channel: OutputChannel) => {
  const seen: string[] = [];
  let completed = false;
  channel.events.subscribe({
    next: (e) => seen.push(e.type === 'text' ? e.delta : e.type),
    complete: () => (completed = true),
  });
  return { seen, completed: () => completed };
};

describe('OutputChannel', () => {
  it('holds events until the first subscriber, then hands them over and keeps nothing more', () => {
    const c = new OutputChannel();
    c.next(text('a'));
    c.next(text('b'));
    expect(c.heldEvents).toBe(2);
    const first = record(c);
    expect(first.seen).toEqual(['a', 'b']);
    for (let i = 0; i < 1000; i++) c.next(text('x'));
    expect(c.heldEvents).toBe(0); // a long answer is not accumulated for later subscribers
    expect(first.seen).toHaveLength(1002);
  });

  it('a later subscriber gets the live events from then on and the done, not a replay', () => {
    const c = new OutputChannel();
    const first = record(c);
    c.next(text('a'));
    const second = record(c);
    c.next(text('b'));
    c.next(done);
    expect(first.seen).toEqual(['a', 'b', 'done']);
    expect(second.seen).toEqual(['b', 'done']);
    expect(first.completed() && second.completed()).toBe(true);
  });

  it('after the end, a subscriber still learns how it ended (usage), and the first one everything', () => {
    const ended = new OutputChannel();
    ended.next(text('a'));
    ended.next(done);
    expect(record(ended).seen).toEqual(['a', 'done']); // nobody had subscribed: all of it
    const late = record(ended);
    expect(late.seen).toEqual(['done']);
    expect(late.completed()).toBe(true);
  });
});
