/**
 * Long answers do not starve newcomers into 500s (issue 41 item 5). The text-in tiny pipeline as shipped (no
 * `admission:`) but with two batch seats per stage, so two long spoken answers hold every seat as sixteen did in the
 * issue. While they speak, each newcomer is either served, its first audio arriving while the long answers are still
 * speaking (seat turns, src/sched/ArScheduler.ts: it did not wait for a seat to come free), or refused at once with
 * 429 + Retry-After; nobody gets a 5xx or an error mid-stream, and the long answers run on without one. Once the
 * newcomers are served the long answers' clients leave (the answers had nothing left to show, and their remaining
 * minute of work on shared CI cores took this test from 36 s to past its 90 s); the server then serves the
 * unloaded reference as on an idle server. Before seat turns,
 * newcomers waited in the stage for a long answer to finish (the issue: CHORUS_ERR_CHUNK_TIMEOUT, HTTP 500, after
 * 30 s). How their first audio compares with one alone is logged; the goal's 2x is bench/admission/longAnswers.ts's.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamChat, type StreamedChat } from '../../bench/streamChat.ts';
import { logger } from '../../src/common/log.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startServer } from '../../src/server/app.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');
const SEATS = 2;
const NEWCOMERS = 3;
/** How long both long answers have spoken when the newcomers come (as the came 8-12 s later). */
const SPEAKING_MS = 1500;
/**
 * Text tokens of a long answer: ~30 s of speech, seconds of work for the tiny models. They must still be speaking when
 * the last newcomer's first audio comes: 400 tokens took ~1.6 s on a machine three times as fast as the first ones,
 * and ended 30 ms before it.
 */
const LONG_TOKENS = 1200;

let close: () => Promise<void>;
let url: string;

/** A streaming audio chat read to its end; `onAudio` hears each audio delta's arrival (ms from the send). */
const chat = (maxTokens: number, onAudio?: (atMs: number) => void | 'stop'): Promise<StreamedChat> =>
  streamChat({ url, maxTokens, prompt: 'tell me a story', ...(onAudio ? { onAudio } : {}) });

beforeAll(async () => {
  const yaml = (await readFile(CONFIG, 'utf8')).replace(/max_num_seqs: 16/g, `max_num_seqs: ${SEATS}`);
  const graph = parseConfig(yaml, CONFIG);
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
  it('a newcomer hears its first audio while the long answers speak, or gets a quick 429; never a 5xx', async () => {
    // The long answers, sent at once to the fresh server (nothing learned yet: both are admitted), each holds its
    // seats for seconds. The newcomers come once both have been speaking for a while (a seat they hold is then not
    // about to come free), as the came 8-12 s later.
    let speaking = 0;
    let onSpeaking: () => void = () => {};
    const bothSpeaking = new Promise<void>((resolve) => (onSpeaking = resolve));
    let newcomersServed = false;
    const long = Array.from({ length: SEATS }, () => {
      let firstMs: number | null = null;
      let counted = false;
      return chat(LONG_TOKENS, (atMs) => {
        if (newcomersServed) return 'stop';
        firstMs ??= atMs;
        if (counted || atMs - firstMs < SPEAKING_MS) return;
        counted = true;
        if (++speaking === SEATS) onSpeaking();
      });
    });
    await Promise.race([bothSpeaking, Promise.all(long)]);
    expect(speaking, 'the long answers ended before the newcomers came: make them longer').toBe(SEATS);
    const newcomers: StreamedChat[] = [];
    for (let i = 0; i < NEWCOMERS; i++) newcomers.push(await chat(8)); // one after another, as a user retries
    newcomersServed = true; // the long answers' clients leave at their next audio delta
    const longDone = await Promise.all(long);
    // When the first long answer ended (its [DONE]), or now for those still running when their clients left.
    const longEndAtMs = Math.min(...longDone.map((l) => l.sentAtMs + l.endMs));
    // What a newcomer takes alone, on the idle server, once warm (a process's first runs are slower).
    await chat(8);
    const alone = await chat(8);
    expect(alone.status).toBe(200);
    const unloadedTtfpMs = alone.firstAudioMs!;

    for (const n of newcomers) {
      expect(n.status === 200 || n.status === 429, `status ${n.status}`).toBe(true);
      if (n.status === 429) {
        expect(Number(n.retryAfter)).toBeGreaterThanOrEqual(1);
        // Refused at the door, not after waiting for a seat. (The goal's 50 ms is the bench's figure,
        // bench/admission/longAnswers.ts: on 2 cores shared with other suites, a refusal's own time took 14-295 ms.)
        expect(n.headersMs).toBeLessThan(SPEAKING_MS);
      } else {
        expect(n.errors).toEqual([]);
        expect(n.done).toBe(true);
        // Seated in its turn, not when a long answer finished and gave its seat up.
        expect(n.sentAtMs + n.firstAudioMs!).toBeLessThan(longEndAtMs);
      }
    }
    for (const l of longDone) {
      expect(l.status).toBe(200);
      expect(l.errors).toEqual([]);
      expect(l.done || l.stopped, 'a long answer ended without [DONE] before its client left').toBe(true);
    }
    expect(
      newcomers.some((n) => n.status === 200),
      'every newcomer refused: nothing shows the turns',
    ).toBe(true);
    console.log(
      `unloaded TTFP ${unloadedTtfpMs.toFixed(0)} ms; newcomers: ` +
        newcomers.map((n) => `${n.status} ${(n.firstAudioMs ?? n.headersMs).toFixed(0)} ms`).join(', '),
    );
  }, 90_000);
});
