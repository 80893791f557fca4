/**
 * /v1/realtime over a real socket against the Engine test double: event shapes and order, the text/transcript
 * rule, session and per-response settings reaching the engine, one active response, cancel, disconnect. Every event
 * any test here receives validates against the openai SDK's own RealtimeServerEvent type, as a JSON schema
 * generated from the installed SDK (test/helpers/openaiRealtimeSchema.ts).
 */
import type { ClientOptions } from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { realtimeServerEventCheck, type EventCheck } from '../helpers/openaiRealtimeSchema.ts';
import { decodeAudioDeltas, RealtimeClient, startTestServer, type ServerEvent } from './serverClient.ts';
import { defaultScript, expectedPcm16, type TestEngine } from './serverTestEngine.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let engine: TestEngine;
let check: EventCheck;
/** The clients of the test running now (their events are checked after it), and the event types checked so far. */
const clients: RealtimeClient[] = [];
const checkedTypes = new Set<string>();

async function connect(url: string, protocols?: string | string[], options?: ClientOptions): Promise<RealtimeClient> {
  const client = await RealtimeClient.connect(url, protocols, options);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  check = realtimeServerEventCheck();
  server = await startTestServer();
  engine = server.engine;
}, 60_000);
afterEach(() => {
  const events = clients.splice(0).flatMap((c) => c.events);
  for (const e of events) checkedTypes.add(e.type);
  expect(events.map(check).filter((problem) => problem !== null)).toEqual([]);
});
afterAll(async () => {
  await server.app.close();
  // What the file's tests cover of the server's events: a test that stopped reaching one would show here.
  expect(checkedTypes.size).toBeGreaterThanOrEqual(MIN_CHECKED_TYPES);
});

const MIN_CHECKED_TYPES = 15;

function typesOf(events: readonly ServerEvent[]): string[] {
  return events.map((e) => e.type);
}

describe('realtime session', () => {
  it('announces the session with its defaults', async () => {
    const client = await connect(server.wsUrl);
    const created = client.events[0];
    expect(created.type).toBe('session.created');
    const session = created.session as Record<string, unknown>;
    expect(session.object).toBe('realtime.session');
    expect(session.output_modalities).toEqual(['audio']);
    expect(session.model).toBe('chorus-test-omni');
    expect((session.audio as { output: { format: unknown } }).output.format).toEqual({
      type: 'audio/pcm',
      rate: 24000,
    });
    client.close();
  });

  it('streams an audio response: transcript and audio interleaved, in GA order, audio intact', async () => {
    engine.script = defaultScript({ tokens: 8, chunkSamples: 4800, tokensPerChunk: 2 });
    const client = await connect(server.wsUrl);
    const done = await client.respond('hello');
    const response = done.response as Record<string, unknown>;
    expect(response.status).toBe('completed');

    const rid = response.id as string;
    const own = client.events.filter(
      (e) =>
        e.response_id === rid ||
        (e.response as { id?: string } | undefined)?.id === rid ||
        e.type.startsWith('conversation.item'),
    );
    const order = typesOf(own).filter((t) => !t.endsWith('.delta'));
    expect(order).toEqual([
      'conversation.item.added', // the user's message
      'conversation.item.done',
      'response.created',
      'response.output_item.added',
      'conversation.item.added', // the assistant's item
      'response.content_part.added',
      'response.output_audio_transcript.done',
      'response.output_audio.done',
      'response.content_part.done',
      'response.output_item.done',
      'conversation.item.done',
      'response.done',
    ]);
    // With audio on, text travels only as the transcript.
    expect(client.ofType('response.output_text.delta')).toHaveLength(0);
    const transcript = client
      .ofType('response.output_audio_transcript.delta')
      .map((e) => e.delta)
      .join('');
    expect(transcript).toBe('w0 w1 w2 w3 w4 w5 w6 w7 ');
    expect(client.ofType('response.output_audio_transcript.done')[0].transcript).toBe(transcript);

    // Interleaved: some audio arrived before the last text delta.
    const types = typesOf(client.events);
    expect(types.indexOf('response.output_audio.delta')).toBeLessThan(
      types.lastIndexOf('response.output_audio_transcript.delta'),
    );

    const pcm = decodeAudioDeltas(client.events, rid);
    expect(pcm.length).toBe(4 * 4800);
    expect(pcm).toEqual(expectedPcm16(4 * 4800));

    const item = (response.output as Record<string, unknown>[])[0];
    expect(item).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_audio', transcript }],
    });
    expect(response.usage).toMatchObject({
      input_tokens: 5,
      output_token_details: { text_tokens: 8, audio_tokens: 10 },
    });
    expect(engine.lastHandle.request.modalities).toEqual(['text', 'audio']);
    client.close();
  });

  it('sends text-only responses as output_text deltas and asks the engine for text only', async () => {
    engine.script = defaultScript({ tokens: 4 });
    const client = await connect(server.wsUrl);
    client.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
    const updated = await client.next('session.updated');
    expect((updated.session as { output_modalities: string[] }).output_modalities).toEqual(['text']);
    const done = await client.respond('hi');
    expect((done.response as { status: string }).status).toBe('completed');
    expect(
      client
        .ofType('response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('w0 w1 w2 w3 ');
    expect(client.ofType('response.output_text.done')[0].text).toBe('w0 w1 w2 w3 ');
    expect(client.ofType('response.output_audio.delta')).toHaveLength(0);
    expect(client.ofType('response.output_audio_transcript.delta')).toHaveLength(0);
    expect(engine.lastHandle.request.modalities).toEqual(['text']);
    client.close();
  });

  it('passes instructions, limits and Chorus extensions to the engine; per-response settings override', async () => {
    engine.script = defaultScript({ tokens: 2 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'session.update',
      session: {
        instructions: 'be brief',
        max_output_tokens: 77,
        seed: 42,
        ignore_eos: true,
        initial_codec_chunk_frames: 3,
      },
    });
    await client.next('session.updated');
    await client.respond('one');
    const first = engine.lastHandle.request;
    expect(first.messages[0]).toEqual({ role: 'system', content: 'be brief' });
    expect(first.messages[1]).toEqual({ role: 'user', content: 'one' });
    expect(first.sampling).toMatchObject({ maxTokens: 77, seed: 42, ignoreEos: true });
    expect(first.talkerSampling).toMatchObject({ seed: 42, ignoreEos: true });
    expect(first.initialCodecChunkFrames).toBe(3);

    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'two' }] },
    });
    client.send({
      type: 'response.create',
      response: {
        instructions: 'be long',
        max_output_tokens: 5,
        initial_codec_chunk_frames: 9,
        temperature: 0.7,
        top_k: 5,
        repetition_penalty: 1.2,
        frequency_penalty: 0.5,
        presence_penalty: -0.5,
        logit_bias: { '7': -100 },
        output_modalities: ['text'],
      },
    });
    await client.next('response.done');
    const second = engine.lastHandle.request;
    expect(second.messages).toEqual([
      { role: 'system', content: 'be long' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'w0 w1 ' }, // the first reply joined the conversation
      { role: 'user', content: 'two' },
    ]);
    expect(second.sampling).toMatchObject({
      maxTokens: 5,
      seed: 42,
      temperature: 0.7,
      topK: 5,
      repetitionPenalty: 1.2,
      frequencyPenalty: 0.5,
      presencePenalty: -0.5,
      logitBias: { '7': -100 },
    });
    expect(second.initialCodecChunkFrames).toBe(9);
    expect(second.modalities).toEqual(['text']);
    client.close();
  });

  it('max_output_tokens "inf" (the session default) keeps the stage\'s max_tokens, as chat does', async () => {
    engine.script = defaultScript({ tokens: 2 });
    const client = await connect(server.wsUrl);
    expect((client.events[0].session as { max_output_tokens: unknown }).max_output_tokens).toBe('inf');
    await client.respond('one');
    // Left to the engine: the stage's max_tokens from the YAML (64 here), not the server's 4096-token cap.
    expect(engine.lastHandle.request.sampling?.maxTokens).toBeUndefined();
    client.send({ type: 'response.create', response: { max_output_tokens: 'inf' } });
    await client.next('response.done');
    expect(engine.lastHandle.request.sampling?.maxTokens).toBeUndefined();
    client.close();
  });

  it('answers out-of-band input without touching the conversation', async () => {
    engine.script = defaultScript({ tokens: 1 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'response.create',
      response: {
        conversation: 'none',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'side' }] }],
      },
    });
    const done = await client.next('response.done');
    // Out of band: in no conversation. Left out, not null (the openai SDK types it optional, not nullable).
    expect(done.response as object).not.toHaveProperty('conversation_id');
    expect(engine.lastHandle.request.messages).toEqual([{ role: 'user', content: 'side' }]);
    // The conversation is still empty, so a normal response has nothing to answer.
    client.send({ type: 'response.create', event_id: 'evt_empty' });
    const err = await client.next('error');
    expect(err.error).toMatchObject({ code: 'CHORUS_ERR_REQUEST_INVALID', event_id: 'evt_empty' });
    client.close();
  });

  it('rejects a second response.create while one is active, and finishes the first', async () => {
    engine.script = defaultScript({ tokens: 6, stepMs: 10 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
    });
    client.send({ type: 'response.create' });
    await client.next('response.created');
    client.send({ type: 'response.create', event_id: 'evt_second' });
    const err = await client.next('error');
    expect(err.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'CHORUS_ERR_RESPONSE_ACTIVE',
      event_id: 'evt_second',
    });
    const done = await client.next('response.done');
    expect((done.response as { status: string }).status).toBe('completed');
    expect(client.ofType('response.created')).toHaveLength(1);
    client.close();
  });

  it('cancels promptly: response.done(cancelled) within 500 ms and no delta after it', async () => {
    engine.script = defaultScript({ tokens: 400, stepMs: 5, chunkSamples: 2400, tokensPerChunk: 1 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
    });
    client.send({ type: 'response.create' });
    const firstAudio = await client.next('response.output_audio.delta');
    const handle = engine.lastHandle;
    const sentAt = performance.now();
    client.send({ type: 'response.cancel', response_id: firstAudio.response_id });
    const done = await client.next('response.done');
    const doneIndex = client.events.indexOf(done);
    expect(client.arrivals[doneIndex] - sentAt).toBeLessThan(500);
    expect(done.response).toMatchObject({
      status: 'cancelled',
      status_details: { type: 'cancelled', reason: 'client_cancelled' },
      // A cancelled response still read its prompt: its input tokens are counted, by modality.
      usage: { input_tokens: 5, input_token_details: { text_tokens: 5, audio_tokens: 0, image_tokens: 0 } },
    });
    expect(handle.cancelCalls).toBe(1);
    expect(await handle.finished).toBe('cancelled');

    // A round trip after the cancel: anything the server still had for the old response would arrive first.
    client.send({ type: 'session.update', session: {} });
    await client.next('session.updated');
    const after = client.events.slice(doneIndex + 1).filter((e) => e.type.endsWith('.delta'));
    expect(after).toEqual([]);

    // The session works on: a new response runs to completion.
    engine.script = defaultScript({ tokens: 2 });
    client.send({ type: 'response.create' });
    expect(((await client.next('response.done')).response as { status: string }).status).toBe('completed');
    client.close();
  });

  it('rejects response.cancel when nothing is in progress', async () => {
    const client = await connect(server.wsUrl);
    client.send({ type: 'response.cancel', event_id: 'evt_c' });
    const err = await client.next('error');
    expect(err.error).toMatchObject({
      type: 'invalid_request_error', // the client's mistake, not the server's
      code: 'CHORUS_ERR_NO_ACTIVE_RESPONSE',
      event_id: 'evt_c',
    });
    client.close();
  });

  it('cancels the request when the socket closes mid-response', async () => {
    engine.script = defaultScript({ tokens: 1000, stepMs: 2 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
    });
    client.send({ type: 'response.create' });
    await client.next('response.output_audio_transcript.delta');
    const handle = engine.lastHandle;
    client.ws.terminate();
    expect(await handle.finished).toBe('cancelled');
    expect(handle.cancelCalls).toBe(1);
  });

  it('retrieves and deletes items: later responses do not see a deleted one; unknown ids are named', async () => {
    engine.script = defaultScript({ tokens: 2 });
    const client = await connect(server.wsUrl);
    const done = (await client.respond('first')).response as {
      output: { id: string; content: { type: string; transcript: string }[] }[];
    };
    const userId = client.ofType('conversation.item.added')[0].item as { id: string };
    const answer = done.output[0];

    client.send({ type: 'conversation.item.retrieve', item_id: answer.id });
    expect((await client.next('conversation.item.retrieved')).item).toEqual({
      id: answer.id,
      object: 'realtime.item',
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_audio', transcript: answer.content[0].transcript }], // spoken: its transcript
    });
    client.send({ type: 'conversation.item.retrieve', item_id: userId.id });
    expect((await client.next('conversation.item.retrieved')).item).toMatchObject({
      role: 'user',
      content: [{ type: 'input_text', text: 'first' }],
    });

    client.send({ type: 'conversation.item.delete', item_id: userId.id });
    expect((await client.next('conversation.item.deleted')).item_id).toBe(userId.id);
    for (const type of ['conversation.item.delete', 'conversation.item.retrieve']) {
      client.send({ type, event_id: 'evt_gone', item_id: userId.id });
      const error = (await client.next('error')).error as { message: string };
      expect(error, type).toMatchObject({ code: 'CHORUS_ERR_NOT_FOUND', param: 'item_id', event_id: 'evt_gone' });
      expect(error.message).toBe(`no item ${userId.id} in this conversation`);
    }

    await client.respond('second');
    expect(engine.lastHandle.request.messages).toEqual([
      { role: 'assistant', content: answer.content[0].transcript },
      { role: 'user', content: 'second' },
    ]);
    client.close();
  });

  it('keeps the answer being written: in progress when retrieved, not deleted until its response ends', async () => {
    engine.script = defaultScript({ tokens: 400, stepMs: 5 });
    const client = await connect(server.wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
    });
    client.send({ type: 'response.create' });
    const { item, response_id } = (await client.next('response.output_item.added')) as unknown as {
      item: { id: string };
      response_id: string;
    };
    client.send({ type: 'conversation.item.retrieve', item_id: item.id });
    expect((await client.next('conversation.item.retrieved')).item).toMatchObject({
      id: item.id,
      status: 'in_progress',
    });
    client.send({ type: 'conversation.item.delete', event_id: 'evt_live', item_id: item.id });
    const refused = (await client.next('error')).error as { message: string };
    expect(refused).toMatchObject({ code: 'CHORUS_ERR_RESPONSE_ACTIVE', param: 'item_id', event_id: 'evt_live' });
    expect(refused.message).toContain(`response ${response_id}`);
    // A retrieve is no reason to stop the answer; the refused delete did not stop it either.
    expect(engine.lastHandle.cancelCalls).toBe(0);

    client.send({ type: 'response.cancel' });
    await client.next('response.done');
    client.send({ type: 'conversation.item.delete', item_id: item.id });
    expect((await client.next('conversation.item.deleted')).item_id).toBe(item.id);
    // A deleted answer is no longer there to truncate.
    client.send({ type: 'conversation.item.truncate', item_id: item.id, content_index: 0, audio_end_ms: 0 });
    expect((await client.next('error')).error).toMatchObject({ code: 'CHORUS_ERR_NOT_FOUND', param: 'item_id' });
    client.close();
  });

  it('reports a failed request as response.done(failed) with the stable code', async () => {
    engine.script = () => [
      { kind: 'text', delta: 'a' },
      { kind: 'fail', code: 'CHORUS_ERR_STAGE_DIED', message: 'talker died' },
    ];
    const client = await connect(server.wsUrl);
    const done = await client.respond('x');
    expect(done.response).toMatchObject({
      status: 'failed',
      status_details: { type: 'failed', error: { code: 'CHORUS_ERR_STAGE_DIED' } },
    });
    client.close();
  });

  it(
    'rejects empty commits and bad audio; on a pipeline without an audio encoder a commit is refused and the ' +
      'buffer dropped',
    async () => {
      // The test double's graph has no encoder stages (serverMedia.double.test.ts covers commits that are taken).
      engine.script = defaultScript({ tokens: 2 });
      const client = await connect(server.wsUrl);
      client.send({ type: 'input_audio_buffer.commit', event_id: 'evt_empty' });
      expect((await client.next('error')).error).toMatchObject({
        code: 'CHORUS_ERR_REQUEST_INVALID',
        event_id: 'evt_empty',
      });
      client.send({ type: 'input_audio_buffer.append', event_id: 'evt_bad', audio: 'not base64!' });
      expect((await client.next('error')).error).toMatchObject({
        code: 'CHORUS_ERR_MEDIA_INVALID',
        event_id: 'evt_bad',
      });
      client.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(4800).toString('base64') });
      client.send({ type: 'input_audio_buffer.commit', event_id: 'evt_no_encoder' });
      const refused = (await client.next('error')).error as { code: string; message: string; event_id: string };
      expect(refused).toMatchObject({ code: 'CHORUS_ERR_MEDIA_INVALID', event_id: 'evt_no_encoder' });
      expect(refused.message).toMatch(/^input_audio_buffer \(audio\): this pipeline has no audio encoder/);
      client.send({ type: 'input_audio_buffer.commit', event_id: 'evt_dropped' }); // the refused audio is gone
      expect((await client.next('error')).error).toMatchObject({
        code: 'CHORUS_ERR_REQUEST_INVALID',
        event_id: 'evt_dropped',
      });
      client.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(8).toString('base64') });
      client.send({ type: 'input_audio_buffer.clear' });
      await client.next('input_audio_buffer.cleared');
      client.send({ type: 'input_audio_buffer.commit', event_id: 'evt_cleared' });
      expect((await client.next('error')).error).toMatchObject({ event_id: 'evt_cleared' });
      expect(client.ofType('input_audio_buffer.committed')).toHaveLength(0);
      expect((await client.respond('still here?')).response).toMatchObject({ status: 'completed' });
      client.close();
    },
  );
});

describe('the SDK schema check', () => {
  it('refuses what an SDK user is not written for: a null the types do not allow, an unknown field, type', () => {
    const done = { type: 'response.done', event_id: 'e1', response: { id: 'r1', object: 'realtime.response' } };
    expect(check(done)).toBeNull();
    expect(check({ ...done, response: { ...done.response, status_details: null } })).toMatch(/status_details/);
    expect(check({ ...done, respones: {} })).toMatch(/additional/);
    expect(check({ ...done, chorus_latency: { ttft_ms: 1 } })).toBeNull(); // Chorus's documented extension
    expect(check({ type: 'response.text.delta.beta', event_id: 'e2' })).toMatch(/not a server event type/);
  });
});
