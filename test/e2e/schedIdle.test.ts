/**
 * `engine.sched: idle` runs a stage's process in Linux's SCHED_IDLE class (src/common/schedIdle.ts): every thread of
 * it, the model's onnxruntime threads (started after it is set) included, and the stage still serves.
 */
import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { SCHED_IDLE, schedPolicyOf } from '../../src/common/schedIdle.ts';
import { collect, configWith } from '../helpers/engine.ts';

const SCHED_OTHER = 0;
let engine: Orchestrator | undefined;

afterAll(async () => {
  await engine?.close();
});

describe('engine.sched: idle', () => {
  it('puts every thread of the stage in SCHED_IDLE, and the stage answers', async () => {
    engine = await Orchestrator.start(
      configWith('text-only.yaml', { 'threads: 1 #': 'threads: 2\n      sched: idle #' }),
    );
    const pid = engine.workerOf('thinker#0')!.pid!;
    const threads = readdirSync(`/proc/${pid}/task`).map(Number);
    expect(threads.length).toBeGreaterThan(2); // main, V8's and libuv's helpers, onnxruntime's second thread
    for (const tid of threads) expect(schedPolicyOf(pid, tid), `thread ${tid}`).toBe(SCHED_IDLE);
    expect(schedPolicyOf(process.pid)).toBe(SCHED_OTHER); // the server stays in the normal class
    const r = await collect(
      engine.generate({
        messages: [{ role: 'user', content: 'Tell me about the sea.' }],
        modalities: ['text'],
        sampling: { maxTokens: 8, ignoreEos: true },
      }),
    );
    expect(r.done.finishReason).toBe('length');
  }, 60_000);
});
