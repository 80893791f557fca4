/**
 * Slow readers: generation is paused instead of memory growing, text overtakes queued audio, and once the
 * client reads again the request resumes and every sample arrives, in order.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudioDeltas, RealtimeClient, startTestServer } from './serverClient.ts';
import { expectedPcm16, type ScriptStep } from './serverTestEngine.ts';

const CHUNK_SAMPLES = 4800; // 9.6 kB of pcm16, 12.8 kB of base64
// ~19 MB of base64: more than the kernel buffers hold (~1.5 MB measured), so only a pause stops it
const MAX_CHUNKS = 1500;

function floodScript(): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let i = 0; i < MAX_CHUNKS; i++)
    steps.push({ kind: 'audio', samples: CHUNK_SAMPLES }, { kind: 'text', delta: `t${i} ` });
  return steps;
}

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer(
    { maxStreamBufferBytes: 256 * 1024, socketHighWaterBytes: 32 * 1024 },
    { script: floodScript },
  );
});
afterAll(async () => {
  await server.app.close();
});

describe('backpressure', () => {
  it('realtime: pauses a slow reader, lets text overtake audio, resumes and delivers all audio in order', async () => {
    const client = await RealtimeClient.connect(server.wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
    });
    client.send({ type: 'response.create' });
    client.ws.pause(); // stop reading the socket: the kernel buffers fill, then the server's queue
    const handle = await (async () => {
      for (;;) {
        const h = server.engine.handles.at(-1);
        if (h) return h;
        await new Promise((r) => setImmediate(r));
      }
    })();
    await handle.whenPaused();
    const emittedAtPause = handle.samplesEmitted;
    expect(emittedAtPause).toBeLessThan(MAX_CHUNKS * CHUNK_SAMPLES);

    client.ws.resume();
    const done = await client.next('response.done', () => true, 60_000);
    expect(handle.resumeCalls).toBeGreaterThanOrEqual(1);
    expect((done.response as { status: string }).status).toBe('completed');

    const pcm = decodeAudioDeltas(client.events);
    expect(pcm.length).toBe(MAX_CHUNKS * CHUNK_SAMPLES);
    expect(Buffer.from(pcm.buffer).equals(Buffer.from(expectedPcm16(MAX_CHUNKS * CHUNK_SAMPLES).buffer))).toBe(true);

    // Text t{i} was produced right after audio chunk i. With one ordered lane it would always arrive after it;
    // with the text lane it overtakes audio that was still queued for the slow reader.
    const audioIndex: number[] = [];
    const textIndex: number[] = [];
    client.events.forEach((e, i) => {
      if (e.type === 'response.output_audio.delta') audioIndex.push(i);
      if (e.type === 'response.output_audio_transcript.delta') textIndex.push(i);
    });
    expect(textIndex).toHaveLength(MAX_CHUNKS);
    const overtaking = textIndex.filter((t, i) => t < audioIndex[i]).length;
    expect(overtaking).toBeGreaterThan(0);
    client.close();
  });

  it('http SSE: pauses while the client does not read, resumes when it does', async () => {
    const url = new URL('/v1/chat/completions', server.base);
    const body = JSON.stringify({
      model: 'chorus-test-omni',
      messages: [{ role: 'user', content: 'x' }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
    });
    const handlesBefore = server.engine.handles.length;
    const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(res.statusCode).toBe(200);
    res.pause();
    const handle = server.engine.handles[handlesBefore];
    await handle.whenPaused();
    expect(handle.samplesEmitted).toBeLessThan(MAX_CHUNKS * CHUNK_SAMPLES);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (text += d));
    res.resume(); // an explicitly paused stream stays paused when a 'data' listener is added
    await new Promise((resolve) => res.on('end', resolve));
    expect(handle.resumeCalls).toBeGreaterThanOrEqual(1);
    const events = text
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    const audio = Buffer.concat(
      events
        .slice(0, -1)
        .map((e) => JSON.parse(e))
        .flatMap((c) =>
          c.choices[0]?.delta?.audio?.data ? [Buffer.from(c.choices[0].delta.audio.data, 'base64')] : [],
        ),
    );
    expect(audio.equals(Buffer.from(expectedPcm16(MAX_CHUNKS * CHUNK_SAMPLES).buffer))).toBe(true);
  });
});
