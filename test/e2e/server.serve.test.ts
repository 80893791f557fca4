/**
 * `chorus serve`: prints its URL, serves, and on SIGTERM/SIGINT with a request in flight closes the server and
 * then the engine, leaving no stage process and no /dev/shm segment.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN, isAlive, segmentsOf, stageProcessesOf } from '../helpers/processes.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml');

describe.each(['SIGTERM', 'SIGINT'] as const)('chorus serve on %s', (signal) => {
  it('serves, then shuts down cleanly with a request in flight', async () => {
    const child = spawn(process.execPath, [CHORUS_BIN, 'serve', '--config', CONFIG, '--port', '0', '--api-key', 'k1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
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
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Talk for a long time' }], modalities: ['text', 'audio'], stream: true, max_tokens: 3000, ignore_eos: true }),
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
    expect(await exited).toBe(0);
    expect(stages.filter(isAlive)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
  }, 90_000);
});

describe('chorus serve --media-url-allow', () => {
  it('refuses a prefix that is not an http(s) URL before starting the pipeline', async () => {
    const child = spawn(process.execPath, [CHORUS_BIN, 'serve', '--config', CONFIG, '--port', '0', '--media-url-allow', 'https://cdn.example.com/images/', '--media-url-allow', 'cdn.example.com/x'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toContain('CHORUS_ERR_CONFIG_INVALID: media URL allow-list entry "cdn.example.com/x" is not an http(s) URL prefix');
    expect(segmentsOf(child.pid!)).toEqual([]); // no pipeline was started
  }, 30_000);
});
