/**
 * Admission while a stage restarts (issue 30 item 5), through the Orchestrator with in-process stand-ins for the
 * stage processes (test/helpers/fakeWorker.ts): a request that arrives while the Thinker's only instance restarts
 * waits for it and is admitted on its READY (the answer whole); one whose wait would outlast chunk_timeout_ms is
 * refused OVERLOADED at once, as before; one whose restart does not come within the deadline ends with OVERLOADED
 * saying what it waited for; a cancelled one is never admitted. And restartWait, the decision, alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StageHealth } from '../../src/common/engine.ts';
import type { ModelFacts } from '../../src/common/modelFacts.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { restartWait } from '../../src/engine/requests/PendingAdmission.ts';
import type { StageBootArgs } from '../../src/worker/messages.ts';
import type { Logger } from '../../src/common/log.ts';
import { collect, configWith, ownSegments, waitFor } from '../helpers/engine.ts';
import { fakeWorkers, type Script } from '../helpers/fakeWorker.ts';

const thinkerFacts: ModelFacts = { kind: 'thinker', vocabSize: 512, hiddenSize: 64, eosTokenId: 2, kvBytesPerToken: 1 };
const request = { messages: [{ role: 'user' as const, content: 'hello' }], modalities: ['text' as const] };
const threeTokens: Script = () => ({
  bodies: [300, 301, 302].map((t) => ({ kind: 'text', tokenIds: [t] })),
  finishReason: 'length',
});

let engine: Orchestrator | null = null;
afterEach(async () => {
  await engine?.close(1_000);
  engine = null;
  expect(ownSegments()).toEqual([]);
});

/**
 * An engine on text-only.yaml whose Thinker's first boot takes `firstBootMs` (the restart estimate /health derives)
 * and whose restarts wait for `openRestart()`.
 */
async function start(chunkTimeoutMs: number, firstBootMs = 0) {
  const fakes = fakeWorkers({ thinker: { facts: thinkerFacts, script: threeTokens } });
  let openRestart = () => {};
  const restartGate = new Promise<void>((resolve) => (openRestart = resolve));
  const startWorker = async (args: StageBootArgs, log: Logger) => {
    if (fakes.started.length === 0) await new Promise((resolve) => setTimeout(resolve, firstBootMs));
    else await restartGate;
    return fakes.startWorker(args, log);
  };
  const edits = { 'async_chunk: true': `async_chunk: true\nchunk_policy: { chunk_timeout_ms: ${chunkTimeoutMs} }` };
  engine = await Orchestrator.start(configWith('text-only.yaml', edits), { startWorker });
  return { fakes, openRestart };
}

const tokensOf = (r: Awaited<ReturnType<typeof collect>>) =>
  r.events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []));

describe('admission while a stage restarts', () => {
  it('waits for the restarting instance and is admitted on its READY: the whole answer', async () => {
    const { fakes, openRestart } = await start(30_000);
    fakes.started[0].kill();
    expect(engine!.health()[0].status).toBe('restarting');
    const handle = engine!.generate(request); // not refused: the Thinker is expected back within 30 s
    const answer = collect(handle);
    expect(fakes.started).toHaveLength(1); // nothing admitted anywhere yet
    openRestart();
    const r = await answer;
    expect(r.done.error).toBeUndefined();
    expect(tokensOf(r)).toEqual([300, 301, 302]);
    const adds = fakes.started[1].received.filter((m) => m.type === 'add').map((m) => m.requestId);
    expect(adds).toEqual([handle.requestId]);
  });

  it('holds its request id while it waits: another request under that id is refused', async () => {
    const { fakes, openRestart } = await start(30_000);
    fakes.started[0].kill();
    const answer = collect(engine!.generate({ ...request, requestId: 'r-1' }));
    expect(() => engine!.generate({ ...request, requestId: 'r-1' })).toThrow(/request id r-1 is already in use/);
    openRestart();
    expect((await answer).done.error).toBeUndefined();
  });

  it('is refused OVERLOADED at once when the restart is expected to outlast chunk_timeout_ms', async () => {
    const { fakes } = await start(100, 300); // its last start took 300 ms: back in ~300 ms, beyond 100
    fakes.started[0].kill();
    expect(() => engine!.generate(request)).toThrow(expect.objectContaining({ code: 'CHORUS_ERR_OVERLOADED' }));
  });

  it('ends with OVERLOADED, saying what it waited for, when no instance is back within chunk_timeout_ms', async () => {
    const { fakes } = await start(200);
    fakes.started[0].kill();
    // The restart is expected back as soon as the first boot took, a wall time a loaded machine stretches past 200 ms
    // (the request would be refused at once): the request comes once the restart is overdue, expected back now (0).
    await waitFor('the restart to be overdue', () => engine!.health()[0].readyInMs === 0);
    const r = await collect(engine!.generate(request));
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_OVERLOADED');
    expect(r.done.error?.message).toMatch(/^waited \d+ ms \(chunk_timeout_ms\) for a ready instance of thinker/);
  });

  it('a request cancelled while it waits ends cancelled and is never admitted', async () => {
    const { fakes, openRestart } = await start(30_000);
    fakes.started[0].kill();
    const handle = engine!.generate(request);
    const answer = collect(handle);
    handle.cancel();
    expect((await answer).done.finishReason).toBe('cancelled');
    openRestart();
    await waitFor('the restart', () => engine!.health()[0].status === 'ready' && fakes.started.length === 2);
    const r = await collect(engine!.generate(request)); // the restarted Thinker serves; it never saw the cancelled one
    expect(tokensOf(r)).toEqual([300, 301, 302]);
    expect(fakes.started[1].received.filter((m) => m.type === 'add')).toHaveLength(1);
  });
});

describe('restartWait', () => {
  const h = (stageId: string, status: StageHealth['status'], readyInMs?: number): StageHealth => ({
    stageId,
    replica: 0,
    status,
    pid: null,
    restarts: 0,
    inFlight: 0,
    ...(readyInMs === undefined ? {} : { readyInMs }),
  });

  it('is the worst missing stage`s soonest instance; null when nothing is missing or a stage has no estimate', () => {
    const ready = h('thinker', 'ready');
    expect(restartWait(['thinker'], [ready])).toBeNull();
    expect(restartWait(['thinker'], [ready, h('thinker', 'restarting', 900)])).toBeNull(); // one ready is enough
    const health = [ready, h('talker', 'restarting', 1_200), h('talker', 'starting', 400), h('code2wav', 'hung')];
    expect(restartWait(['thinker', 'talker'], health)).toEqual({ waitMs: 400, stages: ['talker'] });
    expect(restartWait(['thinker', 'talker', 'code2wav'], health)).toBeNull(); // code2wav: nothing coming back
    expect(restartWait(['talker'], [h('talker', 'restarting', 0)])).toEqual({ waitMs: 0, stages: ['talker'] });
  });
});
