/**
 * Liveness: a stage that stops (SIGSTOP) while it has work is declared hung within stage_hang_ms (with migration off
 * its requests end with CHORUS_ERR_STAGE_HUNG, /health stops calling it ready, a new process replaces it); a single
 * step longer than stage_hang_ms (a big prefill, the process computing all along) is not a hang.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OutputEvent } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, configWith, ownSegments, TALKER_MIGRATION_OFF, waitFor } from '../helpers/engine.ts';

let engine: Orchestrator | null = null;
afterEach(async () => {
  await engine?.close(1_000);
  engine = null;
  expect(ownSegments()).toEqual([]);
});

const ask = (content: string, maxTokens: number, modalities: ('text' | 'audio')[] = ['text', 'audio']) => ({
  messages: [{ role: 'user' as const, content }],
  modalities,
  sampling: { maxTokens, ignoreEos: true },
  talkerSampling: { ignoreEos: true },
});

describe('hung stages', () => {
  it('a stopped Talker is hung within 3 s: its request fails, /health drops it, a new one serves', async () => {
    // Migration off: this is the failure path (test/e2e/migration.test.ts replays a hung Talker's request).
    engine = await Orchestrator.start(configWith('tiny-omni-text-in.yaml', TALKER_MIGRATION_OFF));
    const e = engine;
    const reference = await collect(e.generate(ask('Tell me about the sea.', 8)));
    const talker = e.workerOf('talker#0')!;
    let stoppedAt = 0;
    const r = await collect(e.generate(ask('Tell me about the sea.', 400)), (ev: OutputEvent) => {
      if (ev.type === 'audio' && ev.seq === 0) {
        process.kill(talker.pid!, 'SIGSTOP');
        stoppedAt = Date.now();
      }
    });
    const endedAfterMs = Date.now() - stoppedAt;
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_STAGE_HUNG');
    expect(r.done.error?.message).toMatch(/^stage talker#0 .* made no progress for \d+ ms/);
    expect(endedAfterMs).toBeLessThan(3_000);
    expect(e.health().find((h) => h.stageId === 'talker')!.status).not.toBe('ready');
    await waitFor('a new talker', () => e.health().every((h) => h.status === 'ready'), 60_000);
    expect(e.workerOf('talker#0')!.pid).not.toBe(talker.pid);
    const again = await collect(e.generate(ask('Tell me about the sea.', 8)));
    expect(again.done.finishReason).toBe('length');
    expect(again.text).toBe(reference.text);
  }, 90_000);

  it('one step longer than stage_hang_ms (a big prefill, computing) is not a hang', async () => {
    engine = await Orchestrator.start(
      configWith('text-only.yaml', {
        // stage_nice 0: at the default 8 the stage gets a sixth of the CPU a busy process at nice 0 gets (another
        // test file's, on a loaded CI machine), and its 3 s prefill would outlast the first chunk's 30 s deadline.
        'async_chunk: true': 'async_chunk: true\nstage_hang_ms: 200\nstage_nice: 0',
        'max_num_batched_tokens: 2048': 'max_num_batched_tokens: 4096', // the whole prompt in one step
      }),
    );
    const e = engine;
    const prompt = Array.from({ length: 780 }, (_, i) => `word${i % 50} is here`).join(' '); // ~3.8k tokens
    const startedAtMs = Date.now();
    const r = await collect(e.generate(ask(prompt, 4, ['text'])));
    expect(r.done.finishReason, r.done.error?.message).toBe('length');
    // The first token comes after the prefill, one step of the whole prompt: the stage was silent that long.
    const prefillMs = r.events.find((ev) => ev.type === 'text')!.atMs - startedAtMs;
    expect(prefillMs).toBeGreaterThan(200); // longer than stage_hang_ms...
    expect(e.health()[0]).toMatchObject({ status: 'ready', restarts: 0 }); // ...and nothing was declared hung
  }, 90_000);
});
