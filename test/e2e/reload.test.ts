/**
 * Hot reload under load: streams in flight while the stage graph changes (Talker max_num_seqs, Code2Wav replicas
 * 1 -> 2) finish on the old pipeline, new requests use the new one, nothing leaks; a broken config is refused with
 * the loader's line-precise error and the running graph serves on.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { ReloadableEngine } from '../../src/engine/ReloadableEngine.ts';
import { buildServer } from '../../src/server/app.ts';
import WebSocket from 'ws';
import { chat, startServe } from '../helpers/deployment.ts';
import { ownSegments } from '../helpers/engine.ts';
import { stageProcessesOf } from '../helpers/processes.ts';

const ORIGINAL = readFileSync(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml'), 'utf8');

let engine: ReloadableEngine;
let app: FastifyInstance;
let url: string;
let dir: string;
let file: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-reload-'));
  file = join(dir, 'graph.yaml');
  writeFileSync(file, ORIGINAL);
  engine = await ReloadableEngine.start(await loadConfig(file), {}, 30_000);
  app = buildServer(engine, { apiKey: null, reload: async () => engine.reload(await loadConfig(file)) });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

const reload = () => fetch(`${url}/admin/reload`, { method: 'POST' });
const stagesOf = async (base: string) =>
  (await (await fetch(`${base}/v1/stages`)).json()) as { stages: { stage_id: string; replicas: number }[] };
const stages = () => stagesOf(url);
const withTwoVocoders = (yaml: string) =>
  yaml.replace(
    '  - stage_id: code2wav\n    kind: code2wav\n',
    '  - stage_id: code2wav\n    kind: code2wav\n    replicas: 2\n',
  );

describe('hot reload', () => {
  it('8 streams in flight finish on the old graph; new requests use the new one; nothing leaks', async () => {
    // A Realtime session open across the reload.
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/realtime`);
    const wsEvents: string[] = [];
    ws.on('message', (d) => wsEvents.push((JSON.parse(String(d)) as { type: string }).type));
    await new Promise((resolve) => ws.once('open', resolve));
    let started = 0;
    let finished = 0;
    const inFlight = Array.from({ length: 8 }, (_, i) =>
      chat(url, `Tell me a long story, part ${i}`, { max_tokens: 200, ignore_eos: true }, () => started++).finally(
        () => finished++,
      ),
    );
    await expect.poll(() => started, { timeout: 60_000 }).toBe(8);

    writeFileSync(file, withTwoVocoders(ORIGINAL).replace(/(stage_id: talker[\s\S]*?max_num_seqs: )16/, '$18'));
    const res = await reload();
    expect(res.status).toBe(200);
    expect(finished).toBeLessThan(8); // the swap happened with streams still running on the old pipeline
    expect(((await res.json()) as { changed_stages: string[] }).changed_stages.sort()).toEqual(['code2wav', 'talker']);
    expect((await stages()).stages.find((s) => s.stage_id === 'code2wav')?.replicas).toBe(2);

    for (const answer of await Promise.all(inFlight)) {
      expect(answer.error).toBeNull();
      expect(answer.pcm16.length).toBeGreaterThan(0);
    }
    const after = await chat(url, 'And now?', { max_tokens: 8 });
    expect(after.error).toBeNull();
    // The session opened before the reload is still open and answers on the new graph.
    ws.send(
      JSON.stringify({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
      }),
    );
    ws.send(JSON.stringify({ type: 'response.create', response: { max_output_tokens: 4 } }));
    await expect.poll(() => wsEvents.includes('response.done'), { timeout: 30_000 }).toBe(true);
    expect(wsEvents).not.toContain('error');
    ws.close();
    expect(engine.current.health().filter((h) => h.stageId === 'code2wav')).toHaveLength(2);
    // The old pipeline drained and stopped: only the new one's processes remain.
    await expect.poll(() => engine.draining, { timeout: 60_000 }).toBe(0);
    expect(stageProcessesOf(process.pid)).toHaveLength(4); // thinker, talker, 2 x code2wav
  }, 180_000);

  it('a broken config is refused with its line; the running graph serves on', async () => {
    writeFileSync(file, `${ORIGINAL}\n  - stage_id: extra\n    kind: talkerr\n`);
    const res = await reload();
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('CHORUS_ERR_CONFIG_INVALID');
    expect(body.error.message).toMatch(/graph\.yaml:\d+ stages\[3\]\.kind/);
    const still = await chat(url, 'Still there?', { max_tokens: 6 });
    expect(still.error).toBeNull();
    expect((await stages()).stages.find((s) => s.stage_id === 'code2wav')?.replicas).toBe(2);
    expect(engine.draining).toBe(0);
  }, 60_000);

  it('chorus serve reloads on SIGHUP', async () => {
    const served = join(dir, 'served.yaml');
    writeFileSync(served, ORIGINAL);
    const serve = await startServe(served, {});
    writeFileSync(served, withTwoVocoders(ORIGINAL));
    serve.child.kill('SIGHUP');
    await expect
      .poll(async () => (await stagesOf(serve.url)).stages.find((s) => s.stage_id === 'code2wav')?.replicas, {
        timeout: 60_000,
      })
      .toBe(2);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 90_000);

  it('closing leaves no stage process and no shared memory', async () => {
    await app.close();
    await engine.close();
    expect(stageProcessesOf(process.pid)).toEqual([]);
    expect(ownSegments()).toEqual([]);
  }, 60_000);
});
