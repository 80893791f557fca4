/**
 * 20 realtime sessions at once: each gets its own complete audio, in order, and its own transcript.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudioDeltas, RealtimeClient, startTestServer } from './serverClient.ts';
import { defaultScript, expectedPcm16 } from './serverTestEngine.ts';

const SESSIONS = 20;
const TOKENS = 30;
const CHUNK_SAMPLES = 2400;

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer(
    {},
    { script: defaultScript({ tokens: TOKENS, chunkSamples: CHUNK_SAMPLES, tokensPerChunk: 1 }) },
  );
});
afterAll(async () => {
  await server.app.close();
});

describe('concurrency', () => {
  it(`${SESSIONS} concurrent sessions each receive all of their audio chunks in order`, async () => {
    const clients = await Promise.all(Array.from({ length: SESSIONS }, () => RealtimeClient.connect(server.wsUrl)));
    const dones = await Promise.all(clients.map((c, i) => c.respond(`session ${i}`)));
    for (const [i, client] of clients.entries()) {
      const response = dones[i].response as { id: string; status: string };
      expect(response.status).toBe('completed');
      const pcm = decodeAudioDeltas(client.events, response.id);
      expect(pcm.length).toBe(TOKENS * CHUNK_SAMPLES);
      expect(Buffer.from(pcm.buffer).equals(Buffer.from(expectedPcm16(TOKENS * CHUNK_SAMPLES).buffer))).toBe(true);
      // Only this session's response reached this socket.
      expect(new Set(client.ofType('response.output_audio.delta').map((e) => e.response_id))).toEqual(
        new Set([response.id]),
      );
    }
    // Each session's request carried its own prompt.
    const prompts = server.engine.handles.map((h) => h.request.messages.at(-1)?.content).sort();
    expect(prompts).toEqual(Array.from({ length: SESSIONS }, (_, i) => `session ${i}`).sort());
    for (const c of clients) c.close();
    await Promise.all(clients.map((c) => c.closed));
  });
});
