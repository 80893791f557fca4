/**
 * Admission on latency against one real server (the default pipeline with `admission: {slo_ttfp_ms}` set to half
 * again what one request's first audio alone takes, count bounds far away): offered far beyond what it can serve in
 * time, chats are answered 200 or refused with 429 + Retry-After before any admitted one is served, never a 5xx, and
 * the refusals are the latency gate's (chorus_latency_refusals_total), not the count bound's. Realtime refuses the
 * same way, with an error event naming when to retry, and the session stays open. What must hold on any machine only:
 * speed goals live in the bench (`chorus bench --request-rate`).
 */
import type { RawData } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBenchConfig } from '../../bench/ttfp/inProcessServer.ts';
import { logger } from '../../src/common/log.ts';
import { defaultConfigPath } from '../../src/config/paths.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startServer } from '../../src/server/app.ts';
import { RealtimeClient } from './serverClient.ts';

let engine: Orchestrator;
let close: () => Promise<void>;
let url: string;
/** The latency bound the server holds requests to (read by the graph at each admission). */
let sloTtfpMs = Number.MAX_SAFE_INTEGER;

const BURST = 24;
const chatBody = JSON.stringify({
  messages: [{ role: 'user', content: 'say something' }],
  modalities: ['text', 'audio'],
  audio: { voice: 'alloy', format: 'pcm16' },
  // Long enough that a served answer outlasts any refusal by far: with 8 tokens and the 4-bit models a served answer
  // ended in 43 ms, within a burst's refusal times (a fresh clone's CI, 2026-12-04), and the test below could no
  // longer tell a refusal at the door from one after a wait in line.
  max_tokens: 40,
});

async function chat(): Promise<{ status: number; ms: number; retryAfter: string | null; body: unknown }> {
  const startedAt = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: chatBody,
  });
  const body: unknown = await r.json();
  return { status: r.status, ms: performance.now() - startedAt, retryAfter: r.headers.get('retry-after'), body };
}

/**
 * Holds the server to half again what a warm request's first audio alone takes now, as a client sees it (a streamed
 * chat's first audio chunk; the least of three, so a load spike during one does not set a bound a whole burst fits
 * in). The bound was the whole warm chat's time at first: against a bound on the first packet that is many first
 * packets, and on a machine where a short answer's tail is long against its first audio the estimate (each request
 * still before its first packet charged a share of a first packet alone, LiveCost.ts) admitted a whole burst of 24 (a
 * fresh clone's CI, 2026-12-03). Against a first packet alone, the third of a burst is over the bound on any machine,
 * and the first, estimated at one request alone, is within it.
 */
async function holdToWarmRequest(): Promise<void> {
  let alone = Infinity;
  for (let i = 0; i < 3; i++) alone = Math.min(alone, await firstAudioMs());
  sloTtfpMs = Math.ceil(1.5 * alone);
}

/** A streamed chat's time to its first audio chunk (ms), read to its end. */
async function firstAudioMs(): Promise<number> {
  const startedAt = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...JSON.parse(chatBody), stream: true }),
  });
  expect(r.status).toBe(200);
  let firstAudio: number | null = null;
  let pending = '';
  const decoder = new TextDecoder();
  for await (const bytes of r.body as unknown as AsyncIterable<Uint8Array>) {
    pending += decoder.decode(bytes, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (firstAudio !== null || !line.startsWith('data: {')) continue;
      const chunk = JSON.parse(line.slice('data: '.length)) as { choices: { delta?: { audio?: { data?: string } } }[] };
      if (chunk.choices[0]?.delta?.audio?.data) firstAudio = performance.now() - startedAt;
    }
  }
  expect(firstAudio).not.toBeNull();
  return firstAudio as number;
}

async function latencyRefusals(): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^chorus_latency_refusals_total (\d+)$/m.exec(text)?.[1] ?? NaN);
}

beforeAll(async () => {
  const config = await readBenchConfig(defaultConfigPath());
  // The first request learns nothing about a bound it cannot be held to yet: the bound is set after it, in ms of
  // the one request alone (a server with a bound is a server with this graph).
  const graph = {
    ...config.graph,
    get admission() {
      // The running count fixed: adaptive, it learns from the warm requests alone a limit a burst passes (4 running,
      // refused as "at the 4 whose first packets lately came within the bound"), and this file is the latency gate's.
      return { maxQueueMs: null, sloTtfpMs, runningLimit: 'fixed' as const };
    },
  };
  engine = await Orchestrator.start(graph, { log: logger });
  const started = await startServer(engine, { host: '127.0.0.1', port: 0, apiKey: null, logger });
  url = started.url;
  close = async () => {
    await started.app.close();
    await engine.close();
  };
  const first = await chat(); // cold: it warms the pipeline, each test then measures a warm one (holdToWarmRequest)
  expect(first.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await close?.();
});

describe('admission on the latency estimate', () => {
  it('chat far beyond capacity: 200 or a quick 429 with Retry-After, never a 5xx', async () => {
    await holdToWarmRequest();
    const refusalsBefore = await latencyRefusals();
    const replies = await Promise.all(Array.from({ length: BURST }, chat));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const served = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    expect(served.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body).toMatchObject({ error: { type: 'rate_limit_exceeded', code: 'CHORUS_ERR_RATE_LIMITED' } });
      const { message } = (r.body as { error: { message: string } }).error;
      expect(message).toMatch(/slo_ttfp_ms \d+/);
      // The header is the estimate's (how far over the bound), not the count bound's fixed wait (10 s).
      expect(message).toContain(`retry after ${r.retryAfter} s`);
    }
    // Refused at the door, not after a wait in line: every refusal is answered before the first served answer.
    expect(Math.max(...refused.map((r) => r.ms))).toBeLessThan(Math.min(...served.map((r) => r.ms)));
    // The count bounds (32 running, 64 waiting) were never reached: each 429 is the latency gate's.
    expect((await latencyRefusals()) - refusalsBefore).toBe(refused.length);
  }, 60_000);

  it('Realtime: a response.create beyond it is an error event with when to retry; the session stays open', async () => {
    await holdToWarmRequest();
    const clients = await Promise.all(Array.from({ length: BURST }, () => RealtimeClient.connect(wsUrl())));
    const outcomes = clients.map(outcome);
    for (const c of clients)
      c.send({
        type: 'response.create',
        response: { input: [userItem('say something')], output_modalities: ['audio'], max_output_tokens: 8 },
      });
    const ends = await Promise.all(outcomes);
    const errors = ends.filter((e) => e.type === 'error');
    expect(errors.length).toBeGreaterThan(0);
    expect(ends.filter((e) => e.type === 'response.done').length).toBeGreaterThan(0);
    for (const e of errors) {
      expect(e.error).toMatchObject({ type: 'rate_limit_exceeded', code: 'CHORUS_ERR_RATE_LIMITED' });
      expect((e.error as { message: string }).message).toMatch(/slo_ttfp_ms \d+.*retry after \d+ s/);
    }
    // A refused session answers once the server is idle again (an idle engine admits whatever it measured).
    const refused = clients[ends.findIndex((e) => e.type === 'error')];
    await Promise.all(clients.map((c, i) => (ends[i].type === 'error' ? null : c.next('response.done'))));
    const again = outcome(refused);
    refused.send({
      type: 'response.create',
      response: { input: [userItem('hi')], output_modalities: ['audio'], max_output_tokens: 4 },
    });
    const done = await again;
    expect(done.type).toBe('response.done');
    // incomplete: it ran to its max_output_tokens, as asked.
    expect((done.response as { status: string }).status).toMatch(/^(completed|incomplete)$/);
    for (const c of clients) c.close();
  }, 60_000);
});

function wsUrl(): string {
  return `${url.replace(/^http/, 'ws')}/v1/realtime`;
}

type Ended = { type: string } & Record<string, unknown>;

/** The next response.done or error of a client (listened for before the request is sent). */
function outcome(c: RealtimeClient): Promise<Ended> {
  return new Promise((resolve) => {
    const on = (data: RawData) => {
      const e = JSON.parse(data.toString()) as Ended;
      if (e.type !== 'error' && e.type !== 'response.done') return;
      c.ws.off('message', on);
      resolve(e);
    };
    c.ws.on('message', on);
  });
}

function userItem(text: string) {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}
