/**
 * Long answers do not starve newcomers into 500s (issue 41 item 5). The text-in tiny pipeline with
 * `admission: {slo_ttfp_ms: 1500}` and two batch seats per stage, so two long spoken answers hold every seat as
 * sixteen did in the issue. While they run, each newcomer either hears its first audio within twice what one takes
 * alone (measured in this test, on the idle server afterwards) or is refused at once with 429 + Retry-After; nobody
 * gets a 5xx or an error mid-stream, and the long answers complete. Before admission counted the seats, newcomers were
 * admitted behind the long answers and waited for a seat (the issue: CHORUS_ERR_CHUNK_TIMEOUT, HTTP 500, after 30 s).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamChat, type StreamedChat } from '../../bench/admission/streamChat.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import { logger } from '../../src/common/log.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startServer } from '../../src/server/app.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');
const SEATS = 2;
const NEWCOMERS = 3;
/** The admission bound (first audio), as an operator sets it in the YAML. */
const SLO_TTFP_MS = 1500;
/** Text tokens of a long answer: ~10 s of speech, seconds of work for the tiny models. */
const LONG_TOKENS = 400;

let close: () => Promise<void>;
let url: string;
let graph: StageGraph;

/** A streaming audio chat read to its end; `onAudio` hears each audio delta's arrival (ms from the send). */
const chat = (maxTokens: number, onAudio?: (atMs: number) => void): Promise<StreamedChat> =>
  streamChat({ url, maxTokens, prompt: 'tell me a story', ...(onAudio ? { onAudio } : {}) });

beforeAll(async () => {
  const yaml = (await readFile(CONFIG, 'utf8')).replace(/max_num_seqs: 16/g, `max_num_seqs: ${SEATS}`);
  graph = parseConfig(`${yaml}\nadmission: {slo_ttfp_ms: ${SLO_TTFP_MS}}\n`, CONFIG);
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
    const sloTtfpMs = graph.admission?.sloTtfpMs;
    if (!sloTtfpMs) throw new Error('the test config sets admission.slo_ttfp_ms');
    // The long answers, sent at once to the fresh server (nothing learned yet: both are admitted), each holds its
    // seats for seconds. The newcomers come once both have been speaking for longer than the admission bound (a
    // seat they hold is then not about to come free), as the came 8-12 s later.
    let speaking = 0;
    let onSpeaking: () => void = () => {};
    const bothSpeaking = new Promise<void>((resolve) => (onSpeaking = resolve));
    const long = Array.from({ length: SEATS }, () => {
      let firstMs: number | null = null;
      let counted = false;
      return chat(LONG_TOKENS, (atMs) => {
        firstMs ??= atMs;
        if (counted || atMs - firstMs < sloTtfpMs) return;
        counted = true;
        if (++speaking === SEATS) onSpeaking();
      });
    });
    await Promise.race([bothSpeaking, Promise.all(long)]);
    expect(speaking, 'the long answers ended before the newcomers came: make them longer').toBe(SEATS);
    const newcomers: StreamedChat[] = [];
    for (let i = 0; i < NEWCOMERS; i++) newcomers.push(await chat(8)); // one after another, as a user retries
    const longDone = await Promise.all(long);
    // What a newcomer takes alone, on the idle server, once warm (a process's first runs are slower).
    await chat(8);
    const alone = await chat(8);
    expect(alone.status).toBe(200);
    const unloadedTtfpMs = alone.firstAudioMs!;

    for (const n of newcomers) {
      expect(n.status === 200 || n.status === 429, `status ${n.status}`).toBe(true);
      if (n.status === 429) {
        expect(Number(n.retryAfter)).toBeGreaterThanOrEqual(1);
        // Refused at the door, not after waiting for a seat: sooner than the bound it was refused on. (The goal's
        // 50 ms is the bench's figure, bench/admission/longAnswers.ts: on 2 cores shared with other suites, a
        // refusal's own time took 14-295 ms.)
        expect(n.headersMs).toBeLessThan(sloTtfpMs);
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
