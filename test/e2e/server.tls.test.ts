/**
 * TLS: `chorus serve --tls-cert --tls-key` serves https and wss on one port, and the official openai SDK's
 * Realtime client (openai/realtime/ws, unmodified; it always builds a wss:// URL) talks to the real pipeline
 * with a self-signed certificate made here, its CA passed as the SDK documents (ws options). A session, a
 * text + audio response, and a cancel. Then what the SDK's user meets when asking for what Chorus does not do
 * (issue 32): every such field refused by name, truncation echoed, and no null where the SDK's types allow none (chat's
 * side of it: server.orchestrator.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHORUS_BIN } from '../helpers/processes.ts';
import { selfSignedCert } from '../helpers/tls.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');

/** Resolves with the next event of `type` the connection emits. */
function next<T>(rt: OpenAIRealtimeWS, type: string): Promise<T> {
  return new Promise((resolve) => rt.once(type as 'session.created', (e: unknown) => resolve(e as T)));
}

let url: string;
let cert: string;
let child: ChildProcess;
let certDir: string;

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'chorus-tls-'));
  const files = selfSignedCert(certDir);
  cert = files.certFile;
  const key = files.keyFile;
  child = spawn(
    process.execPath,
    [CHORUS_BIN, 'serve', '--config', CONFIG, '--port', '0', '--api-key', 'k1', '--tls-cert', cert, '--tls-key', key],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' } },
  );
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /serving (https:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
}, 120_000);

afterAll(async () => {
  rmSync(certDir, { recursive: true, force: true });
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
});

describe('chorus serve over TLS', () => {
  it('the openai SDK Realtime client connects over wss: session, a text + audio answer, a cancel', async () => {
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
  }, 60_000);

  it('Realtime: refuses by name what Chorus does not do; no null where the SDK types allow none', async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'k1' });
    const rt = new OpenAIRealtimeWS({ model: 'chorus', options: { ca: readFileSync(cert) } }, client);
    rt.on('error', () => {}); // the SDK re-emits error events here; they are read from the event stream below
    const events: { type: string; [k: string]: unknown }[] = [];
    const waiting: ((e: (typeof events)[number]) => void)[] = [];
    rt.on('event', (e) => {
      events.push(e as unknown as (typeof events)[number]);
      waiting.shift()?.(events.at(-1)!);
    });
    const reply = () => new Promise<(typeof events)[number]>((resolve) => waiting.push(resolve));
    await next(rt, 'session.created');

    // Each field that asks for what Chorus does not implement: an error naming it, and the session unchanged.
    const refusals: [Record<string, unknown>, string][] = [
      [{ parallel_tool_calls: true }, 'session.parallel_tool_calls'],
      [{ prompt: { id: 'pmpt_1' } }, 'session.prompt'],
      [{ audio: { input: { noise_reduction: { type: 'near_field' } } } }, 'session.audio.input.noise_reduction'],
    ];
    for (const [session, param] of refusals) {
      const answer = reply();
      rt.send({ type: 'session.update', session: { type: 'realtime', ...session } } as never);
      expect((await answer).error, param).toMatchObject({
        type: 'invalid_request_error',
        code: 'CHORUS_ERR_PARAM_UNSUPPORTED',
        param,
      });
    }
    // A field of no API at all (a typo): refused, named.
    let answer = reply();
    rt.send({ type: 'session.update', session: { type: 'realtime', max_output_token: 5 } } as never);
    expect((await answer).error).toMatchObject({
      code: 'CHORUS_ERR_REQUEST_INVALID',
      param: 'session.max_output_token',
    });
    // What asks for nothing is taken; truncation is implemented and echoed.
    answer = reply();
    const truncation = { type: 'retention_ratio', retention_ratio: 0.5 } as const;
    rt.send({
      type: 'session.update',
      session: { type: 'realtime', tools: [], tool_choice: 'auto', truncation, tracing: 'auto' },
    });
    const updated = await answer;
    expect(updated.type).toBe('session.updated');
    const session = updated.session as { truncation: unknown; tracing: unknown; chorus_tracing: string };
    expect(session.truncation).toEqual(truncation);
    // tracing is taken and echoed; this server exports no traces, and says so rather than ignoring it.
    expect(session.tracing).toBe('auto');
    expect(session.chorus_tracing).toMatch(/^off/);

    // response.created: in progress, so no status_details (the SDK types it optional, not nullable), and no usage.
    rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] },
    });
    const created = next<{ response: Record<string, unknown> }>(rt, 'response.created');
    const done = next<{ response: Record<string, unknown> }>(rt, 'response.done');
    rt.send({ type: 'response.create', response: { output_modalities: ['text'], max_output_tokens: 2 } });
    expect((await created).response).not.toHaveProperty('status_details');
    expect((await created).response).not.toHaveProperty('usage');
    expect((await done).response).toMatchObject({
      status: 'incomplete',
      status_details: { reason: 'max_output_tokens' },
    });
    rt.close();
  }, 60_000);
});
