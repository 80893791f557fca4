/**
 * Request migration through the Orchestrator, with in-process stand-ins for the stage processes
 * (test/helpers/fakeWorker.ts): a Thinker lost mid-answer is replayed on its restarted instance under the next run
 * id and the client gets each token once; a request whose every candidate instance is gone, and one past its
 * max_attempts, fail with the stage's error saying why they were not migrated; with migration off they fail as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OutputEvent } from '../../src/common/engine.ts';
import type { ModelFacts } from '../../src/common/modelFacts.ts';
import { Orchestrator, type OrchestratorOptions } from '../../src/engine/Orchestrator.ts';
import { collect, configWith, ownSegments, waitFor } from '../helpers/engine.ts';
import { fakeWorkers, type Script } from '../helpers/fakeWorker.ts';

const thinkerFacts: ModelFacts = { kind: 'thinker', vocabSize: 512, hiddenSize: 64, eosTokenId: 2, kvBytesPerToken: 1 };
const request = { messages: [{ role: 'user' as const, content: 'hello' }], modalities: ['text' as const] };
const THREADS = 'threads: 1 # onnxruntime intra-op threads (this is the only stage, but the server shares the cores)';

/** The first run writes two tokens and works on; a replay (run id `~N`) writes the whole answer, if `finishes`. */
const answer =
  (finishes: boolean): Script =>
  (add) =>
    add.requestId.includes('~') && finishes
      ? { bodies: [300, 301, 302].map((t) => ({ kind: 'text', tokenIds: [t] })), finishReason: 'length' }
      : { bodies: [{ kind: 'text', tokenIds: [300, 301] }], finishReason: 'length', open: true };

let engine: Orchestrator | null = null;
afterEach(async () => {
  await engine?.close(1_000);
  engine = null;
  expect(ownSegments()).toEqual([]);
});

async function start(migration: string, script: Script, opts: OrchestratorOptions = {}, timeout = '') {
  const fakes = fakeWorkers({ thinker: { facts: thinkerFacts, script } });
  const edits: Record<string, string> = { [THREADS]: `threads: 1${migration}` };
  if (timeout) edits['async_chunk: true'] = `async_chunk: true\nchunk_policy: { chunk_timeout_ms: ${timeout} }`;
  engine = await Orchestrator.start(configWith('text-only.yaml', edits), { startWorker: fakes.startWorker, ...opts });
  return fakes;
}

/** Kills the running Thinker once the client has its first two tokens. */
const killAtSecondToken = (fakes: Awaited<ReturnType<typeof start>>) => (e: OutputEvent) => {
  if (e.type === 'text' && e.tokenIds.includes(301)) fakes.started.at(-1)!.kill();
};

describe('migration through the Orchestrator', () => {
  it('a Thinker lost mid-answer is replayed on its restarted instance; the client gets each token once', async () => {
    const fakes = await start('\n      migration: {}', answer(true));
    const handle = engine!.generate(request);
    const r = await collect(handle, killAtSecondToken(fakes));
    expect(r.done.error).toBeUndefined();
    expect(r.done.finishReason).toBe('length');
    expect(r.events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []))).toEqual([300, 301, 302]);
    expect(r.done.usage.completionTokens).toBe(3);
    const adds = fakes.started.map((w) => w.received.filter((m) => m.type === 'add').map((m) => m.requestId));
    expect(adds).toEqual([[handle.requestId], [`${handle.requestId}~1`]]);
  });

  it('is on by default: with no engine.migration in the YAML, the lost request is replayed', async () => {
    const fakes = await start('', answer(true));
    const handle = engine!.generate(request);
    const r = await collect(handle, killAtSecondToken(fakes));
    expect(r.done.error).toBeUndefined();
    expect(r.events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []))).toEqual([300, 301, 302]);
    expect(fakes.started[1].received.filter((m) => m.type === 'add').map((m) => m.requestId)).toEqual([
      `${handle.requestId}~1`,
    ]);
  });

  it('fails, saying why, when no instance of its stage is ready within chunk_timeout_ms', async () => {
    const fakes = await start('\n      migration: {}', answer(true), { restartOnDeath: false }, '200');
    const r = await collect(engine!.generate(request), killAtSecondToken(fakes));
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_STAGE_DIED');
    expect(r.done.error?.message).toMatch(
      /died .*\(not migrated: waited 0\.2 s \(chunk_policy\.chunk_timeout_ms\) and no instance of stage thinker /,
    );
    expect(r.events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []))).toEqual([300, 301]);
  });

  it('fails, saying why, once it was migrated max_attempts times', async () => {
    const fakes = await start('\n      migration: { max_attempts: 1 }', answer(false));
    // The replay writes tokens 300 and 301 again: the client had them, so no event fires this kill a second time.
    const r = collect(engine!.generate(request), killAtSecondToken(fakes));
    const replayed = () => fakes.started[1]?.received.some((m) => m.type === 'add') === true;
    await waitFor('the replay on the restarted Thinker', replayed);
    fakes.started[1].kill();
    const { done } = await r;
    expect(done.error?.code).toBe('CHORUS_ERR_STAGE_DIED');
    expect(done.error?.message).toMatch(/\(not migrated: it was migrated 1 times already .*max_attempts\)/);
  });

  it('with migration off, a lost request fails as before', async () => {
    const fakes = await start('\n      migration: false', answer(true));
    const { done } = await collect(engine!.generate(request), killAtSecondToken(fakes));
    expect(done.error?.code).toBe('CHORUS_ERR_STAGE_DIED');
    expect(done.error?.message).not.toMatch(/migrat/);
  });
});
