/**
 * `chorus serve`: prints its URL, serves, and on SIGTERM/SIGINT with a request in flight closes the server and
 * then the engine, leaving no stage process and no /dev/shm segment.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN, isAlive, segmentsOf, stageProcessesOf, killOnFinish } from '../helpers/processes.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');

describe.each(['SIGTERM', 'SIGINT'] as const)('chorus serve on %s', (signal) => {
  it('serves, then shuts down cleanly with a request in flight', async () => {
    // A drain of 1 s: the 3000-token answer cannot finish in it, so it is cancelled when the drain times out.
    const args = ['serve', '--config', CONFIG, '--port', '0', '--api-key', 'k1', '--drain-timeout', '1'];
    const child = spawn(process.execPath, [CHORUS_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
    killOnFinish(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) resolve(m[1]);
      });
      void exited.then((code) => reject(new Error(`serve exited early with ${code}: ${stderr}`)));
    });
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect((await fetch(`${url}/v1/models`)).status).toBe(401);

    // A long streamed answer, in flight when the signal arrives.
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k1' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'Talk for a long time' }],
        modalities: ['text', 'audio'],
        stream: true,
        max_tokens: 3000,
        ignore_eos: true,
      }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('chat.completion.chunk');

    const stages = stageProcessesOf(child.pid!);
    expect(stages.length).toBe(3);
    expect(segmentsOf(child.pid!).length).toBeGreaterThan(0);

    child.kill(signal);
    // The stream ends (with an error event for the cancelled request) instead of hanging the shutdown.
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toContain('CHORUS_ERR_REQUEST_CANCELLED');
    expect(rest).toContain('the server shut down (drain timeout) before the answer finished');
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 90_000);
});

describe('chorus serve drains on SIGTERM', () => {
  it('answers in flight finish, new requests get 503 + Retry-After, then exit 0 with nothing left', async () => {
    const child = spawn(process.execPath, [CHORUS_BIN, 'serve', '--config', CONFIG, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
    killOnFinish(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) resolve(m[1]);
      });
      void exited.then((code) => reject(new Error(`serve exited early with ${code}`)));
    });
    const chat = (maxTokens: number) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          messages: [{ role: 'user', content: 'Talk to me' }],
          modalities: ['text', 'audio'],
          stream: true,
          max_tokens: maxTokens,
          ignore_eos: true,
        }),
      });
    const streams = await Promise.all([0, 1, 2, 3].map(() => chat(60)));
    const readers = streams.map((r) => r.body!.getReader());
    await Promise.all(readers.map((r) => r.read())); // all four are streaming
    const stages = stageProcessesOf(child.pid!);
    child.kill('SIGTERM');
    const bodies = readers.map(async (reader) => {
      let text = '';
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
      return text;
    });
    // While they drain, a new request is turned away with a hint when to come back.
    let refused: Response;
    do refused = await chat(4);
    while (refused.status === 200);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('CHORUS_ERR_SHUTTING_DOWN');
    for (const body of await Promise.all(bodies)) {
      expect(body).toContain('"finish_reason":"length"'); // finished, not cancelled
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 90_000);
});

describe('chorus serve --media-url-allow', () => {
  it('refuses a prefix that is not an http(s) URL before starting the pipeline', async () => {
    const child = spawn(
      process.execPath,
      [
        CHORUS_BIN,
        'serve',
        '--config',
        CONFIG,
        '--port',
        '0',
        '--media-url-allow',
        'https://cdn.example.com/images/',
        '--media-url-allow',
        'cdn.example.com/x',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
      },
    );
    killOnFinish(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toContain(
      'CHORUS_ERR_CONFIG_INVALID: media URL allow-list entry "cdn.example.com/x" is not an http(s) URL prefix',
    );
    expect(segmentsOf(child.pid!)).toEqual([]); // no pipeline was started
  }, 30_000);
});
