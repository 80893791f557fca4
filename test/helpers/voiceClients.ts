/**
 * Voice clients in their own process (forked by test/e2e/voiceLoad.test.ts), so the server's event loop in the
 * test process is measured without the clients' own work on it. argv: ws URL, sessions, stagger ms. Prints one
 * JSON line: the event types each session saw. Over IPC (when forked with it) it says 'talking' as the sessions start.
 */
import WebSocket from 'ws';
import { concatPcm, quiet, speak } from './speech.ts';

const [url, sessions, staggerMs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];

/** One session: speaks `pcm` at real-time pace, resolves with the event types it saw once its answer is done. */
async function talk(pcm: Int16Array, offsetMs: number): Promise<string[]> {
  const ws = new WebSocket(url);
  const seen: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    ws.on('message', (data) => {
      const type = (JSON.parse(String(data)) as { type: string }).type;
      seen.push(type);
      if (type === 'response.done') resolve();
      if (type === 'error') reject(new Error(String(data)));
    });
    ws.on('close', () => reject(new Error(`closed before the answer; saw ${seen.join(', ')}`)));
  });
  await new Promise((resolve) => ws.once('open', resolve));
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        max_output_tokens: 8,
        audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 400 } } },
      },
    }),
  );
  await new Promise((r) => setTimeout(r, offsetMs)); // sessions start staggered, as people do
  const chunk = 480; // 20 ms at 24 kHz
  const start = performance.now();
  for (let i = 0, n = 0; i < pcm.length; i += chunk, n++) {
    const part = pcm.subarray(i, i + chunk);
    const audio = Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64');
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio }));
    const due = start + (n + 1) * 20 - performance.now();
    if (due > 0) await new Promise((r) => setTimeout(r, due)); // real-time pace of a microphone
  }
  await done;
  ws.removeAllListeners('close');
  ws.close();
  return seen;
}

const speech = concatPcm(quiet(300), speak('What is the weather like by the sea today?'), quiet(900));
process.send?.('talking'); // this process is up and has its speech: what follows is the sessions' own load
const seen = await Promise.all(Array.from({ length: sessions }, (_, i) => talk(speech, i * staggerMs)));
process.stdout.write(`${JSON.stringify(seen)}\n`);
