/**
 * Speech heard as text (HeardTurns): a user audio part's transcript becomes what the Thinker gets, and a response
 * waits for the transcripts before it; a client's second response.create meanwhile is refused, a voice turn's joins
 * the waiting one, response.cancel drops it, a failed transcript leaves the turn unheard.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { Conversation, toChatMessages, type StoredItem } from '../../src/server/realtime/Conversation.ts';
import { HeardTurns } from '../../src/server/realtime/HeardTurns.ts';
import { InputTranscription } from '../../src/server/realtime/InputTranscription.ts';
import type { ServerEvent } from '../../src/server/realtime/ServerEvent.ts';
import type { Transcriber } from '../../src/server/transcription/Transcriber.ts';

const audio = { type: 'audio', data: new Uint8Array(48000), format: 'pcm16', sampleRateHz: 24000 } as const;

/** A transcriber whose transcripts the test hands out (or fails) one by one, in order. */
function controlled() {
  const calls: { resolve: (t: string) => void; reject: (e: Error) => void }[] = [];
  const transcriber: Transcriber = {
    transcribe: (_audio, _setting, _signal, onDelta) =>
      new Promise<string>((resolve, reject) => {
        calls.push({ resolve: (t) => (onDelta(t), resolve(t)), reject });
      }),
  };
  return { transcriber, calls };
}

function setup() {
  const { transcriber, calls } = controlled();
  const events: ServerEvent[] = [];
  const conversation = new Conversation({ maxItems: 10, maxMediaBytes: 1 << 20 });
  const transcription = new InputTranscription(transcriber, { send: (e: ServerEvent) => events.push(e) });
  const heard = new HeardTurns(transcription, conversation);
  const say = (id: string) => {
    const item: StoredItem = {
      id,
      role: 'user',
      parts: [{ type: 'input_audio', text: '', media: audio, heard: true }],
    };
    conversation.insert(item);
    heard.hear(item, null);
  };
  return { calls, events, conversation, heard, say };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('HeardTurns', () => {
  it("renders the transcript as the user's text and starts the response only once it is in", async () => {
    const { calls, events, conversation, heard, say } = setup();
    say('item_a');
    const created: string[][] = [];
    const create = () => {
      created.push(toChatMessages('', conversation.items()).messages.map((m) => m.content as string));
    };
    heard.afterHearing(create, (err) => expect.fail(String(err)), true);
    await flush();
    expect(created).toEqual([]);
    calls[0].resolve('What is the capital of France?');
    await flush();
    await flush();
    expect(created).toEqual([['What is the capital of France?']]);
    expect(events.find((e) => e.type.endsWith('.completed'))).toMatchObject({ item_id: 'item_a', content_index: 0 });
    // Nothing pending: the next one starts at once.
    heard.afterHearing(create, () => {}, true);
    expect(created).toHaveLength(2);
  });

  it("refuses a client's second response.create while one waits, joins a voice turn's, drops on cancel", async () => {
    const { calls, heard, say } = setup();
    say('item_a');
    let started = 0;
    heard.afterHearing(
      () => started++,
      () => {},
      false,
    );
    heard.afterHearing(
      () => started++,
      () => {},
      false,
    ); // the next voice turn: answered by the waiting response
    expect(() =>
      heard.afterHearing(
        () => started++,
        () => {},
        true,
      ),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.RESPONSE_ACTIVE }));
    say('item_b'); // a transcript started while waiting is waited for too
    calls[0].resolve('one');
    await flush();
    expect(started).toBe(0);
    calls[1].resolve('two');
    await flush();
    await flush();
    expect(started).toBe(1);
    say('item_c');
    heard.afterHearing(
      () => started++,
      () => {},
      true,
    );
    expect(heard.dropWaiting()).toBe(true);
    expect(heard.dropWaiting()).toBe(false);
    calls[2].resolve('three');
    await flush();
    await flush();
    expect(started).toBe(1);
  });

  it('leaves a turn whose transcription failed unheard, with a .failed event', async () => {
    const { calls, events, conversation, heard, say } = setup();
    say('item_a');
    const failures: unknown[] = [];
    heard.afterHearing(
      () => {
        if (toChatMessages('', conversation.items()).messages.length === 0) throw new Error('nothing to respond to');
      },
      (err) => failures.push(err),
      true,
    );
    calls[0].reject(new Error('model crashed'));
    await flush();
    await flush();
    expect(events.map((e) => e.type)).toEqual(['conversation.item.input_audio_transcription.failed']);
    expect(failures).toHaveLength(1);
  });
});
