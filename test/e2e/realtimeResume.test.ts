/**
 * Realtime session resume and playback acknowledgement (Chorus extensions, docs/realtime-resume.md) over real sockets
 * against the Engine test double, whose audio is a counter (any sample lost, repeated or reordered shows).
 *
 * The goal (issue 41): a socket dropped mid-answer and resumed within 5 s ends with the same text and audio as an
 * undisturbed session of the same script, no event lost or duplicated. Then the bounds: a token is its API key's only,
 * it dies with the resume window (the answer in flight is cancelled and the slot freed), and events the replay buffer
 * no longer holds end the session with a clear error instead of a silent gap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realtimeServerEventCheck, type EventCheck } from '../helpers/openaiRealtimeSchema.ts';
import { decodeAudioDeltas, RealtimeClient, startTestServer, type ServerEvent } from './serverClient.ts';
import { defaultScript, expectedPcm16 } from './serverTestEngine.ts';

type Server = Awaited<ReturnType<typeof startTestServer>>;
let open: Server;
let keyed: Server;
let bounded: Server;
let check: EventCheck;

/** 12 words, an audio chunk of 4800 samples every 2, 25 ms apart: long enough to drop the socket in the middle. */
const script = defaultScript({ tokens: 12, chunkSamples: 4800, tokensPerChunk: 2, stepMs: 25 });

beforeAll(async () => {
  check = realtimeServerEventCheck();
  [open, keyed, bounded] = await Promise.all([
    startTestServer({}, { script }),
    startTestServer({ apiKey: ['key-a', 'key-b'] }, { script }),
    startTestServer({}, { script, realtimeResume: { windowMs: 1500, bufferBytes: 20_000 } }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([open, keyed, bounded].map((s) => s?.app.close()));
});

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

async function resumable(url: string, key?: string): Promise<{ client: RealtimeClient; token: string }> {
  const client = await RealtimeClient.connect(url, undefined, key ? bearer(key) : undefined);
  client.send({ type: 'session.resume.enable' });
  const enabled = await client.next('session.resume.enabled');
  return { client, token: enabled.resume_token as string };
}

function ask(client: RealtimeClient, text: string): void {
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
  });
  client.send({ type: 'response.create' });
}

/** What an event says, without what differs between two sessions (ids) or connections (chorus_seq). */
function content(e: ServerEvent): string {
  const { event_id: _e, chorus_seq: _s, response_id: _r, item_id: _i, previous_item_id: _p, ...rest } = e;
  const { response: _resp, item: _item, ...without } = rest as Record<string, unknown>;
  return JSON.stringify(without);
}

const responseEvents = (events: readonly ServerEvent[]) =>
  events.filter((e) => e.type.startsWith('response.') || e.type.startsWith('conversation.item.'));

const transcript = (events: readonly ServerEvent[]) =>
  events
    .filter((e) => e.type === 'response.output_audio_transcript.delta')
    .map((e) => e.delta as string)
    .join('');

describe('session resume', () => {
  it('ends a socket dropped mid-answer and resumed in 5 s as undisturbed: nothing lost or twice', async () => {
    // The undisturbed session, same script.
    const calm = await resumable(open.wsUrl);
    ask(calm.client, 'hello');
    await calm.client.next('response.done');
    const reference = responseEvents(calm.client.events);
    calm.client.close();

    const { client: first, token } = await resumable(open.wsUrl);
    ask(first, 'hello');
    await first.next('response.output_audio.delta');
    first.ws.terminate(); // no close frame: the server sees the connection drop (1006)
    const droppedAtMs = performance.now();
    // The answer goes on without the client: wait for the engine to end it, so all of the rest waits in the server.
    expect(await open.engine.lastHandle.finished).toBe('stop');
    // The last events the client got were lost in flight as far as it knows: it resumes from three before them.
    const numbered = first.events.filter((e) => typeof e.chorus_seq === 'number');
    const lastSeq = numbered.at(-4)!.chorus_seq as number;
    const second = await RealtimeClient.connect(open.wsUrl);
    second.send({ type: 'session.resume', resume_token: token, last_seq: lastSeq });
    const resumed = await second.next('session.resumed');
    expect(performance.now() - droppedAtMs).toBeLessThan(5000);
    expect(resumed.last_seq).toBe(lastSeq);
    expect(resumed.replayed).toBeGreaterThanOrEqual(3);
    await second.next('response.done');

    // Every seq once, in order: what the first socket had up to lastSeq, then the second socket's.
    const after = second.events.filter((e) => typeof e.chorus_seq === 'number');
    const seqs = [...numbered.filter((e) => (e.chorus_seq as number) <= lastSeq), ...after].map((e) => e.chorus_seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const received = responseEvents([...numbered.filter((e) => (e.chorus_seq as number) <= lastSeq), ...after]);
    expect(received.map(content).sort()).toEqual(reference.map(content).sort());
    expect(transcript(received)).toBe(transcript(reference));
    expect(transcript(received)).toBe(Array.from({ length: 12 }, (_, i) => `w${i} `).join(''));
    expect(decodeAudioDeltas(received)).toEqual(expectedPcm16(6 * 4800));
    // The OpenAI events are still OpenAI's (the official SDK reads them; chorus_seq is an extension field).
    const ours = new Set(['session.resume.enabled', 'session.resumed']);
    const problems = [...first.events, ...second.events].filter((e) => !ours.has(e.type)).map(check);
    expect(problems.filter((p) => p !== null)).toEqual([]);

    // The history is the session's: the next turn reads the first answer, and the session goes on numbering.
    ask(second, 'and then?');
    const done = await second.next('response.done');
    expect(done.chorus_seq).toBeGreaterThan(seqs.length);
    expect(JSON.stringify(open.engine.lastHandle.request.messages)).toContain('w11');
    second.close();
  });

  it('numbers nothing and keeps nothing for a client that never asked', async () => {
    const client = await RealtimeClient.connect(open.wsUrl);
    ask(client, 'hi');
    await client.next('response.done');
    expect(client.events.some((e) => 'chorus_seq' in e)).toBe(false);
    client.close();
  });

  it('refuses an unknown token, and session.resume after other events, and the new session goes on', async () => {
    const client = await RealtimeClient.connect(open.wsUrl);
    client.send({ type: 'session.resume', resume_token: 'made-up', last_seq: 0 });
    const refused = await client.next('error');
    expect((refused.error as { code: string }).code).toBe('CHORUS_ERR_RESUME_TOKEN_INVALID');
    ask(client, 'hi');
    await client.next('response.done');
    client.send({ type: 'session.resume', resume_token: 'made-up', last_seq: 0 });
    const late = await client.next('error');
    expect((late.error as { param: string }).param).toBe('type');
    client.close();
  });

  it("gives a token's session to its own API key only", async () => {
    const { client, token } = await resumable(keyed.wsUrl, 'key-a');
    ask(client, 'hello');
    await client.next('response.done');
    client.ws.terminate();
    const other = await RealtimeClient.connect(keyed.wsUrl, undefined, bearer('key-b'));
    other.send({ type: 'session.resume', resume_token: token, last_seq: 0 });
    expect(((await other.next('error')).error as { code: string }).code).toBe('CHORUS_ERR_RESUME_TOKEN_INVALID');
    other.close();
    const owner = await RealtimeClient.connect(keyed.wsUrl, undefined, bearer('key-a'));
    owner.send({ type: 'session.resume', resume_token: token, last_seq: 0 });
    const resumed = await owner.next('session.resumed');
    expect(resumed.replayed).toBeGreaterThan(0);
    await owner.next('response.done');
    owner.close();
  });

  it('ends the session when its resume window passes: the answer is cancelled, the token dead', async () => {
    bounded.engine.script = defaultScript({ tokens: 400, chunkSamples: 480, tokensPerChunk: 4, stepMs: 20 });
    const { client, token } = await resumable(bounded.wsUrl);
    ask(client, 'a long one');
    await client.next('response.output_audio.delta');
    client.ws.terminate();
    const droppedAtMs = performance.now();
    expect(await bounded.engine.lastHandle.finished).toBe('cancelled');
    expect(performance.now() - droppedAtMs).toBeGreaterThanOrEqual(1400); // it waited for its client first
    const late = await RealtimeClient.connect(bounded.wsUrl);
    late.send({ type: 'session.resume', resume_token: token, last_seq: 0 });
    expect(((await late.next('error')).error as { code: string }).code).toBe('CHORUS_ERR_RESUME_TOKEN_INVALID');
    late.close();
  });

  it('ends the session with CHORUS_ERR_RESUME_GAP when the missed events are no longer held', async () => {
    bounded.engine.script = script; // six 4800-sample chunks: ~77 kB of events against a 20 kB buffer
    const { client, token } = await resumable(bounded.wsUrl);
    ask(client, 'hello');
    await client.next('response.done');
    client.ws.terminate();
    const again = await RealtimeClient.connect(bounded.wsUrl);
    again.send({ type: 'session.resume', resume_token: token, last_seq: 0 });
    const gap = await again.next('error');
    expect((gap.error as { code: string }).code).toBe('CHORUS_ERR_RESUME_GAP');
    again.send({ type: 'session.resume', resume_token: token, last_seq: 0 });
    expect(((await again.next('error')).error as { code: string }).code).toBe('CHORUS_ERR_RESUME_TOKEN_INVALID');
    again.close();
  });
});

describe('playback acknowledgement', () => {
  it("keeps what the client played of an answer it cut off, at the next turn's start", async () => {
    open.engine.script = defaultScript({ tokens: 8, chunkSamples: 4800, tokensPerChunk: 2 });
    const client = await RealtimeClient.connect(open.wsUrl);
    ask(client, 'hello');
    const done = await client.next('response.done');
    const itemId = (done.response as { output: { id: string }[] }).output[0].id;
    client.send({ type: 'output_audio.playback_ack', item_id: itemId, played_ms: 5000 });
    expect(((await client.next('error')).error as { param: string }).param).toBe('played_ms');
    client.send({ type: 'output_audio.playback_ack', item_id: 'item_none', played_ms: 10 });
    expect(((await client.next('error')).error as { code: string }).code).toBe('CHORUS_ERR_NOT_FOUND');
    client.send({ type: 'output_audio.playback_ack', item_id: itemId, played_ms: 100 });
    client.send({ type: 'output_audio.playback_ack', item_id: itemId, played_ms: 300 });
    ask(client, 'go on');
    const truncated = await client.next('conversation.item.truncated');
    expect(truncated).toMatchObject({ item_id: itemId, audio_end_ms: 300 });
    await client.next('response.done');
    // The answer was 800 ms of audio for 8 words; the next prompt holds only what 300 ms of it voiced.
    const messages = open.engine.lastHandle.request.messages;
    const said = JSON.stringify(messages.filter((m) => m.role === 'assistant'));
    expect(said).toContain('w0');
    expect(said).not.toContain('w7');
    client.close();
  });
});
