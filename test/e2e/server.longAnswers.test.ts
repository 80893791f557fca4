/**
 * Long answers do not starve newcomers into 500s (issue 41 item 5). The text-in tiny pipeline, unconfigured
 * admission (the default bound), two batch seats per stage, so two long spoken answers hold every seat as sixteen
 * did in the issue. While they run, each newcomer either hears its first audio within twice what one took alone
 * (measured first, in this test) or is refused at once with 429 + Retry-After; nobody gets a 5xx or an error
 * mid-stream, and the long answers complete. Before admission counted the seats, newcomers were admitted behind the
 * long answers and waited for a seat (the issue: CHORUS_ERR_CHUNK_TIMEOUT, HTTP 500, after 30 s). */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageGraph } from '../../src/common/graph.ts';
import { logger } from '../../src/common/log.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startServer } from '../../src/server/app.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');
const SEATS = 2;
const NEWCOMERS = 3;
/** Text tokens of a long answer: ~10 s of speech, seconds of work for the tiny models. */
const LONG_TOKENS = 400;

let close: () => Promise<void>;
let url: string;
let graph: StageGraph;

interface Streamed {
  readonly status: number;
  /** From the send: the response's headers, its first audio (null: none), its end. */
  readonly headersMs: number;
  readonly firstAudioMs: number | null;
  readonly retryAfter: string | null;
  readonly errors: readonly string[];
  readonly done: boolean;
}

/** A streaming audio chat, read to its end; `onAudio` hears each audio delta's arrival (ms from the send). */
async function chat(maxTokens: number, onAudio: (atMs: number) => void = () => {}): Promise<Streamed> {
  const sentAt = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'tell me a story' }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      max_tokens: maxTokens,
      stream: true,
    }),
  });
  const headersMs = performance.now() - sentAt;
  const base = { status: r.status, headersMs, retryAfter: r.headers.get('retry-after') };
  if (r.status !== 200) {
    await r.body?.cancel();
    return { ...base, firstAudioMs: null, errors: [], done: false };
  }
  let firstAudioMs: number | null = null;
  const errors: string[] = [];
  let done = false;
  let pending = '';
  const decoder = new TextDecoder();
  for await (const bytes of r.body!) {
    pending += decoder.decode(bytes as Uint8Array, { stream: true });
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('data: ')) continue;
      if (line === 'data: [DONE]') {
        done = true;
        continue;
      }
      const event = JSON.parse(line.slice(6)) as {
        error?: { code: string };
        choices?: { delta?: { audio?: { data?: string } } }[];
      };
      if (event.error) errors.push(event.error.code);
      if (event.choices?.[0]?.delta?.audio?.data) {
        const atMs = performance.now() - sentAt;
        firstAudioMs ??= atMs;
        onAudio(atMs);
      }
    }
  }
  return { ...base, firstAudioMs, errors, done };
}

beforeAll(async () => {
  const yaml = (await readFile(CONFIG, 'utf8')).replace(/max_num_seqs: 16/g, `max_num_seqs: ${SEATS}`);
  graph = parseConfig(yaml, CONFIG); // no `admission:`: the default bound
  const engine = await Orchestrator.start(graph, { log: logger });
  const started = await startServer(engine, { host: '127.0.0.1', port: 0, apiKey: null, logger });
  url = started.url;
  close = async () => {
    await started.app.close();
    await engine.close();
  };
}, 60_000);

afterAll(async () => {
  await close?.();
});

describe('long answers holding every seat', () => {
  it('a newcomer hears its first audio within 2x its unloaded TTFP or gets a quick 429; never a 5xx', async () => {
    await chat(8); // warm: the first request of a process pays for its first model runs
    const alone = await chat(8);
    expect(alone.status).toBe(200);
    const unloadedTtfpMs = alone.firstAudioMs!;
    const sloTtfpMs = graph.admission?.sloTtfpMs;
    if (!sloTtfpMs) throw new Error('a config without `admission:` has the default bound (config/defaults.ts)');

    // The long answers, one after the other (the first is admitted onto an idle server, the second beside it): each
    // holds its seats for seconds. The newcomers come once both have been speaking for longer than the admission
    // bound (a seat they hold is then not about to come free), as the came 8-12 s later.
    let speaking = 0;
    let onSpeaking: () => void = () => {};
    const bothSpeaking = new Promise<void>((resolve) => (onSpeaking = resolve));
    const long: Promise<Streamed>[] = [];
    for (let i = 0; i < SEATS; i++) {
      let firstMs: number | null = null;
      let counted = false;
      let onFirst: () => void = () => {};
      const first = new Promise<void>((resolve) => (onFirst = resolve));
      long.push(
        chat(LONG_TOKENS, (atMs) => {
          firstMs ??= atMs;
          onFirst();
          if (counted || atMs - firstMs < sloTtfpMs) return;
          counted = true;
          if (++speaking === SEATS) onSpeaking();
        }),
      );
      await Promise.race([first, long[i]]);
    }
    await Promise.race([bothSpeaking, Promise.all(long)]);
    expect(speaking, 'the long answers ended before the newcomers came: make them longer').toBe(SEATS);
    const newcomers: Streamed[] = [];
    for (let i = 0; i < NEWCOMERS; i++) newcomers.push(await chat(8)); // one after another, as a user retries
    const longDone = await Promise.all(long);

    for (const n of newcomers) {
      expect(n.status === 200 || n.status === 429, `status ${n.status}`).toBe(true);
      if (n.status === 429) {
        expect(Number(n.retryAfter)).toBeGreaterThanOrEqual(1);
        // Refused at the door: within the goal's 50 ms, or on a machine too loaded for that (other suites beside
        // this one on 2 cores), sooner than one request alone takes to its first audio: never after a wait.
        expect(n.headersMs).toBeLessThan(Math.max(50, unloadedTtfpMs));
      } else {
        expect(n.errors).toEqual([]);
        expect(n.firstAudioMs!).toBeLessThanOrEqual(2 * unloadedTtfpMs);
      }
    }
    for (const l of longDone) {
      expect(l.status).toBe(200);
      expect(l.errors).toEqual([]);
      expect(l.done).toBe(true);
    }
    console.log(
      `unloaded TTFP ${unloadedTtfpMs.toFixed(0)} ms; newcomers: ` +
        newcomers.map((n) => `${n.status} ${(n.firstAudioMs ?? n.headersMs).toFixed(0)} ms`).join(', '),
    );
  }, 90_000);
});
