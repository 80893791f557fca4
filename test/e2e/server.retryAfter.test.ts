/**
 * A stage restart's 503s say when to come back from how long the stage's last start took, not a fixed 10 s
 * (configs/tiny-omni-text-in.yaml: the Talker process is killed; main restarts it).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { buildServer } from '../../src/server/app.ts';
import { waitFor } from '../helpers/engine.ts';

let engine: Orchestrator;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  engine = await Orchestrator.start(
    await loadConfig(new URL('../../configs/tiny-omni-text-in.yaml', import.meta.url).pathname),
  );
  app = buildServer(engine, { apiKey: null });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  base = `http://127.0.0.1:${address.port}`;
}, 240_000);

afterAll(async () => {
  await app?.close();
  await engine?.close();
});

const talkerReadyInMs = () => engine.health().find((h) => h.stageId === 'talker')?.readyInMs;

describe('Retry-After while a stage restarts', () => {
  it('is the time the stage should take to be back, on requests and on /health', async () => {
    const talker = engine.workerOf('talker#0')!;
    // Main's own 'died' listener ran first: the talker is restarting when this one runs.
    const died = new Promise<void>((resolve) => talker.on('died', () => resolve()));
    process.kill(talker.pid!, 'SIGKILL');
    await died;
    const diedAt = performance.now();

    const before = talkerReadyInMs()!;
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], modalities: ['text', 'audio'] }),
    });
    const health = await fetch(`${base}/health`);
    const after = talkerReadyInMs() ?? 0;

    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('CHORUS_ERR_OVERLOADED');
    const retryAfter = Number(res.headers.get('retry-after'));
    // From the talker's last start (the estimate counts down while it boots), not the queue's fixed 10 s.
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Math.ceil(after / 1000)));
    expect(retryAfter).toBeLessThanOrEqual(Math.max(1, Math.ceil(before / 1000)));
    expect(health.status).toBe(503);
    expect(Number(health.headers.get('retry-after'))).toBeLessThanOrEqual(retryAfter);

    await waitFor('the talker back', () => engine.health().every((h) => h.status === 'ready'), 60_000);
    const backAfterS = (performance.now() - diedAt) / 1000;
    console.log(
      `Retry-After ${retryAfter} s (estimate ${before} ms); the talker was back after ${backAfterS.toFixed(1)} s`,
    );
    const ok = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'hi' }],
        modalities: ['text', 'audio'],
        max_tokens: 2,
      }),
    });
    expect(ok.status).toBe(200);
  });
});
