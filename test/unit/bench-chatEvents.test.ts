/**
 * The bench's reading of a chat completion stream (bench/streamChat.ts chatEvents): events whose lines come in pieces
 * cut anywhere, a multi-byte character cut between two pieces, several events in one piece, and the end.
 */
import { expect, it } from 'vitest';
import { chatEvents } from '../../bench/streamChat.ts';

function streamOf(pieces: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({ pull: (c) => (i < pieces.length ? c.enqueue(pieces[i++]) : c.close()) });
}

async function read(body: ReadableStream<Uint8Array>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const event of chatEvents(body)) out.push(event);
  return out;
}

const events = [
  { choices: [{ delta: { content: 'héllo – ✓' } }] },
  { choices: [{ delta: { audio: { data: 'A'.repeat(5000) } } }] },
  { error: { code: 'CHORUS_ERR_X', message: 'm' } },
];
const text = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}: a comment\ndata: [DONE]\n\n`;
const bytes = new TextEncoder().encode(text);

it('reads every event whole whatever pieces its bytes come in', async () => {
  const expected = [...events, '[DONE]'];
  expect(await read(streamOf([bytes]))).toEqual(expected);
  for (const size of [1, 2, 3, 7, 64, 1000, 4999]) {
    const pieces: Uint8Array[] = [];
    for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
    expect(await read(streamOf(pieces)), `pieces of ${size} bytes`).toEqual(expected);
  }
});

it('leaves out a last line the stream never ends', async () => {
  const cut = new TextEncoder().encode('data: {"choices":[]}\n\ndata: {"choices"');
  expect(await read(streamOf([cut]))).toEqual([{ choices: [] }]);
});
