/**
 * TLS: `chorus serve --tls-cert --tls-key` serves https and wss on one port, and the official openai SDK's
 * Realtime client (openai/realtime/ws, unmodified; it always builds a wss:// URL) talks to the real pipeline
 * with a self-signed certificate made here, its CA passed as the SDK documents (ws options). A session, a
 * text + audio response, and a cancel.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN, killOnFinish } from '../helpers/processes.ts';
import { selfSignedCert } from '../helpers/tls.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');

/** Resolves with the next event of `type` the connection emits. */
function next<T>(rt: OpenAIRealtimeWS, type: string): Promise<T> {
  return new Promise((resolve) => rt.once(type as 'session.created', (e: unknown) => resolve(e as T)));
}

describe('chorus serve over TLS', () => {
  it('the openai SDK Realtime client connects over wss: session, a text + audio answer, a cancel', async () => {
    const { certFile: cert, keyFile: key } = selfSignedCert();
    const child = spawn(
      process.execPath,
      [CHORUS_BIN, 'serve', '--config', CONFIG, '--port', '0', '--api-key', 'k1', '--tls-cert', cert, '--tls-key', key],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' } },
    );
    killOnFinish(child);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /serving (https:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
    });

    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k1' });
    const rt = new OpenAIRealtimeWS({ model: 'chorus', options: { ca: readFileSync(cert) } }, client);
    expect(rt.url.protocol).toBe('wss:');
    const session = await next<{ session: { object: string } }>(rt, 'session.created');
    expect(session.session.object).toBe('realtime.session');

    // A text + audio answer.
    let transcript = '';
    let audioBytes = 0;
    rt.on('response.output_audio_transcript.delta', (e) => (transcript += e.delta));
    rt.on('response.output_audio.delta', (e) => (audioBytes += Buffer.from(e.delta, 'base64').length));
    rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] },
    });
    rt.send({ type: 'response.create', response: { max_output_tokens: 6 } });
    const done = await next<{ response: { status: string; usage: { output_tokens: number } } }>(rt, 'response.done');
    expect(done.response.status).toBe('incomplete'); // max_output_tokens reached (random weights never stop)
    expect(transcript.length).toBeGreaterThan(0);
    expect(audioBytes).toBeGreaterThan(0);

    // A cancel mid-answer.
    rt.send({ type: 'response.create', response: { max_output_tokens: 400 } });
    const firstAudio = await next<{ response_id: string }>(rt, 'response.output_audio.delta');
    rt.send({ type: 'response.cancel', response_id: firstAudio.response_id });
    const cancelled = await next<{ response: { status: string; id: string } }>(rt, 'response.done');
    expect(cancelled.response).toMatchObject({ status: 'cancelled', id: firstAudio.response_id });
    rt.close();

    child.kill('SIGTERM');
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
  }, 120_000);
});
