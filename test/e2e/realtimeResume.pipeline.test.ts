/**
 * Issue 41's resume goal against the real pipeline (tiny-omni-text-in: Thinker -> Talker -> Code2Wav, greedy): a
 * spoken answer whose socket is dropped at its first audio and resumed on a new connection ends with the same
 * transcript and the same audio, byte for byte, as the same question asked in an undisturbed session; every
 * chorus_seq arrives once and in order.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeAudioDeltas, RealtimeClient, type ServerEvent } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

let server: ServedPipeline;

beforeAll(async () => {
  server = await servePipeline('tiny-omni-text-in.yaml');
}, 120_000);
afterAll(async () => {
  await server?.close();
});

async function resumable(): Promise<{ client: RealtimeClient; token: string }> {
  const client = await RealtimeClient.connect(server.wsUrl);
  client.send({ type: 'session.resume.enable' });
  return { client, token: (await client.next('session.resume.enabled')).resume_token as string };
}

function ask(client: RealtimeClient): void {
  client.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea.' }] },
  });
  client.send({ type: 'response.create', response: { max_output_tokens: 32 } });
}

const transcript = (events: readonly ServerEvent[]) =>
  events
    .filter((e) => e.type === 'response.output_audio_transcript.delta')
    .map((e) => e.delta as string)
    .join('');

it('a dropped and resumed answer is the undisturbed answer, text and audio', async () => {
  const calm = await resumable();
  ask(calm.client);
  await calm.client.next('response.done', () => true, 60_000);
  calm.client.close();

  const { client, token } = await resumable();
  ask(client);
  await client.next('response.output_audio.delta', () => true, 60_000);
  client.ws.terminate();
  const droppedAtMs = performance.now();
  const numbered = client.events.filter((e) => typeof e.chorus_seq === 'number');
  const lastSeq = numbered.at(-1)!.chorus_seq as number;
  const again = await RealtimeClient.connect(server.wsUrl);
  again.send({ type: 'session.resume', resume_token: token, last_seq: lastSeq });
  await again.next('session.resumed');
  expect(performance.now() - droppedAtMs).toBeLessThan(5000);
  await again.next('response.done', () => true, 60_000);
  const received = [...numbered, ...again.events.filter((e) => typeof e.chorus_seq === 'number')];
  expect(received.map((e) => e.chorus_seq)).toEqual(received.map((_, i) => i + 1));
  expect(transcript(received)).toBe(transcript(calm.client.events));
  expect(transcript(received).length).toBeGreaterThan(0);
  const audio = decodeAudioDeltas(received);
  expect(audio.length).toBeGreaterThan(0);
  expect(audio).toEqual(decodeAudioDeltas(calm.client.events));
  again.close();
}, 180_000);
