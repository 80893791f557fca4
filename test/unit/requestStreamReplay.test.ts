/**
 * RequestStream across a migration (requests/migration.ts): the replay's text tokens and audio samples that the
 * client already has are skipped, whatever chunks the replay cuts them into, the audio packets go on in sequence,
 * an output that had already ended is not sent again, the pause ends at the first new output, and the request ends
 * once with usage counting each token and sample once.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { OutputEvent } from '../../src/common/engine.ts';
import type { ChunkBody } from '../../src/common/payloads.ts';
import { ReplayCursor } from '../../src/engine/requests/migration.ts';
import { RequestStream } from '../../src/engine/RequestStream.ts';
import { received, resetSeqs } from '../helpers/fakeStage.ts';

const RATE = 24_000;
/** Samples numbered from `from` on: which ones reach the client shows what was skipped or sent twice. */
const audio = (from: number, length: number): ChunkBody => ({
  kind: 'audio',
  pcm: Float32Array.from({ length }, (_, i) => (from + i) / 1e4),
  sampleRateHz: RATE,
});
const text = (...tokenIds: number[]): ChunkBody => ({ kind: 'text', tokenIds });

function open() {
  let ends = 0;
  const s = new RequestStream(
    'r',
    new Map([['thinker', 'thinker#0']]),
    [
      { stageId: 'thinker', type: 'text' },
      { stageId: 'code2wav', type: 'audio' },
    ],
    10,
    [],
    { push: (id) => `<${id}>`, flush: () => '' },
    { sampleRateHz: RATE, samplesPerFrame: 1920, framesPerToken: 2 },
    () => ends++,
  );
  const events: OutputEvent[] = [];
  s.events.events.subscribe((e) => events.push(e));
  const chunk = (run: string, stageId: string, body: ChunkBody | null, final = false) =>
    s.onChunk(stageId, received(run, stageId, 'main', body, final));
  return { s, events, chunk, ends: () => ends };
}

const samples = (events: readonly OutputEvent[]) =>
  events.flatMap((e) => (e.type === 'audio' ? [...e.pcm].map((x) => Math.round(x * 1e4)) : []));
const tokens = (events: readonly OutputEvent[]) => events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []));

describe('RequestStream replay', () => {
  beforeEach(() => resetSeqs());

  it('skips what the client has, in other chunk cuts; audio goes on in sequence; usage counts each once', () => {
    const { s, events, chunk, ends } = open();
    chunk('r', 'thinker', text(1, 2));
    chunk('r', 'code2wav', audio(0, 1000));
    chunk('r', 'code2wav', audio(1000, 500));
    expect(s.delivered).toEqual({ tokens: 2, samples: 1500 });
    // The Talker died: the replay (run r~1) starts from the prompt again.
    let caughtUp = 0;
    const { tokens: t, samples: n } = s.delivered;
    s.replay(new Map([['thinker', 'thinker#0']]), new ReplayCursor(t, n), () => caughtUp++);
    chunk('r~1', 'thinker', text(1));
    chunk('r~1', 'code2wav', audio(0, 1200));
    expect(caughtUp).toBe(0); // nothing new yet: the client still sees the pause
    chunk('r~1', 'code2wav', audio(1200, 800)); // samples 1200-1999: 1500 on are new
    expect(caughtUp).toBe(1);
    chunk('r~1', 'thinker', text(2, 3, 4), true);
    chunk('r~1', 'code2wav', audio(2000, 100), true);
    expect(caughtUp).toBe(1);
    expect(tokens(events)).toEqual([1, 2, 3, 4]);
    expect(samples(events)).toEqual(Array.from({ length: 2100 }, (_, i) => i));
    const seqs = events.flatMap((e) => (e.type === 'audio' ? [e.seq] : []));
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const done = events.at(-1)!;
    expect(done).toMatchObject({ type: 'done', finishReason: 'stop' });
    expect(done.type === 'done' && done.usage).toMatchObject({ completionTokens: 4, audioSeconds: 2100 / RATE });
    expect(ends()).toBe(1);
  });

  it('an output that had ended before the loss is not sent again; the replay ends the request once', () => {
    const { s, events, chunk, ends } = open();
    chunk('r', 'thinker', text(1, 2, 3), true); // the text is all out
    chunk('r', 'code2wav', audio(0, 300));
    const { tokens: t, samples: n } = s.delivered;
    s.replay(new Map(), new ReplayCursor(t, n), () => {});
    chunk('r~1', 'thinker', text(1, 2, 3), true);
    chunk('r~1', 'code2wav', audio(0, 500), true);
    expect(tokens(events)).toEqual([1, 2, 3]);
    expect(events.filter((e) => e.type === 'text').map((e) => e.type === 'text' && e.delta)).toEqual(['<1><2><3>']);
    expect(samples(events)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
    expect(ends()).toBe(1);
  });
});
