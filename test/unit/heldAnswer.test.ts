/** HeldAnswer over a fake engine handle: what is held, replayed, paused, adopted and discarded. */
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { GenerateRequest, OutputEvent, RequestHandle } from '../../src/common/engine.ts';
import { HeldAnswer } from '../../src/server/realtime/HeldAnswer.ts';

function fakeEngine() {
  const events = new Subject<OutputEvent>();
  const calls: string[] = [];
  const handle: RequestHandle = {
    requestId: 'resp_1',
    prompt: { text: 3, audio: 0, image: 0, video: 0 },
    events,
    cancel: () => calls.push('cancel'),
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
  };
  return { events, calls, generate: () => handle };
}

const request = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({
  requestId: 'resp_1',
  messages: [{ role: 'user', content: [{ type: 'audio', data: Buffer.from([1, 2, 3, 4]), format: 'pcm16' }] }],
  modalities: ['text', 'audio'],
  ...over,
});

const audio = (seq: number, seconds = 1): OutputEvent => ({
  type: 'audio',
  pcm: new Float32Array(24000 * seconds),
  sampleRateHz: 24000,
  seq,
  atMs: seq,
});

describe('HeldAnswer', () => {
  it('holds every event until adopted, then replays them in order and passes the live ones on', () => {
    const engine = fakeEngine();
    let released = 0;
    const held = HeldAnswer.start(engine.generate, request(), () => released++);
    engine.events.next({ type: 'text', delta: 'Hi', tokenIds: [1], atMs: 0 });
    engine.events.next(audio(0));
    const seen: OutputEvent[] = [];
    const handle = held.adopt();
    engine.events.next(audio(1)); // before the adopter subscribed: still held, in order
    handle.events.subscribe((e) => seen.push(e));
    engine.events.next(audio(2));
    expect(seen.map((e) => (e.type === 'audio' ? e.seq : e.type))).toEqual(['text', 0, 1, 2]);
    expect(released).toBe(0); // the slot goes with the answer
    expect(held.releaseSlot).toBeTypeOf('function');
    expect(() => held.adopt()).toThrow(/already adopted or discarded/);
  });

  it('an answer that failed while held hands its events, then its error, to the adopter', () => {
    const engine = fakeEngine();
    const held = HeldAnswer.start(engine.generate, request(), () => {});
    engine.events.next({ type: 'text', delta: 'Hi', tokenIds: [1], atMs: 0 });
    engine.events.error(new Error('stage died'));
    const seen: string[] = [];
    held.adopt().events.subscribe({
      next: (e) => seen.push(e.type),
      error: (err: Error) => seen.push(`error: ${err.message}`),
      complete: () => seen.push('complete'),
    });
    expect(seen).toEqual(['text', 'error: stage died']);
  });

  it('matches only the very request it was started with (the id aside), audio bytes included', () => {
    const engine = fakeEngine();
    const held = HeldAnswer.start(engine.generate, request(), () => {});
    expect(held.matches(request({ requestId: 'resp_other' }))).toBe(true);
    const other = request({
      messages: [{ role: 'user', content: [{ type: 'audio', data: Buffer.from([1, 2, 3, 5]), format: 'pcm16' }] }],
    });
    expect(held.matches(other)).toBe(false);
    expect(held.matches(request({ sampling: { maxTokens: 8 } }))).toBe(false);
  });

  it('discard cancels the request, gives the slot back, and nothing of it is delivered', () => {
    const engine = fakeEngine();
    let released = 0;
    const held = HeldAnswer.start(engine.generate, request(), () => released++);
    engine.events.next(audio(0));
    held.discard();
    held.discard(); // idempotent
    expect(engine.calls).toEqual(['cancel']);
    expect(released).toBe(1);
    expect(engine.events.observed).toBe(false); // unsubscribed: later events go nowhere
  });

  it('past 20 s of held audio the request pauses; adoption resumes it before the adopter subscribes', () => {
    const engine = fakeEngine();
    const held = HeldAnswer.start(engine.generate, request(), () => {});
    for (let i = 0; i < 20; i++) engine.events.next(audio(i));
    expect(engine.calls).toEqual([]);
    engine.events.next(audio(20));
    engine.events.next(audio(21));
    expect(engine.calls).toEqual(['pause']);
    const handle = held.adopt();
    expect(engine.calls).toEqual(['pause', 'resume']);
    let n = 0;
    handle.events.subscribe(() => n++);
    expect(n).toBe(22);
    handle.pause(); // the adopter's own backpressure reaches the request
    expect(engine.calls).toEqual(['pause', 'resume', 'pause']);
  });
});
