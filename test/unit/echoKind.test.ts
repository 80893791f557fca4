/**
 * A stage kind that lives in the test tree (test/helpers/kinds/echo: descriptor, protocol, core) runs requests
 * through the real engine and the real stage loop: registered at test time, it touches no file under src/worker/
 * or src/engine/. Its add arguments are built by its descriptor, its stats section reaches main's diagnostics and
 * is read through its accessor, and its own message (stop) reaches its core through the loop's generic `kind` case.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { StageGraph, StageKind } from '../../src/common/graph.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { registerStageKind, stageKinds, unregisterStageKind } from '../../stages/registry.ts';
import type { AddRequest } from '../../src/worker/messages.ts';
import { collect, configWith, ownSegments, waitFor } from '../helpers/engine.ts';
import { InProcessStage } from '../helpers/inProcessStage.ts';
import { echo, ECHO_MAX_POSITIONS } from '../helpers/kinds/echo/descriptor.ts';
import { echoMessage, echoStatsOf, type EchoArgs } from '../helpers/kinds/echo/protocol.ts';

/** text-only.yaml with its one stage (the entry) of the echo kind. */
function echoGraph(): StageGraph {
  const graph = configWith('text-only.yaml');
  const stages = graph.stages.map((s) => (s.stageId === graph.entryStageId ? { ...s, kind: 'echo' as StageKind } : s));
  return { ...graph, stages };
}

async function startEngine(): Promise<{ engine: Orchestrator; stages: InProcessStage[] }> {
  const stages: InProcessStage[] = [];
  const engine = await Orchestrator.start(echoGraph(), {
    startWorker: async (args) => {
      const stage = await InProcessStage.start(args);
      stages.push(stage);
      return stage;
    },
  });
  return { engine, stages };
}

const request = (maxTokens: number) => ({
  messages: [{ role: 'user' as const, content: 'hello' }],
  modalities: ['text' as const],
  sampling: { maxTokens },
});

let engine: Orchestrator | null = null;
beforeAll(() => {
  if (!Object.hasOwn(stageKinds, 'echo')) registerStageKind(echo);
});
afterAll(() => unregisterStageKind(echo.kind));
afterEach(async () => {
  await engine?.close(1_000);
  engine = null;
  expect(ownSegments()).toEqual([]);
});

describe('a stage kind from the test tree (echo)', () => {
  it('runs a request: its descriptor builds the args, its text reaches the client, its stats reach main', async () => {
    const reports: unknown[] = [];
    const onStats = (m: unknown) => reports.push(m);
    subscribe(channelNames.stageStats, onStats);
    try {
      const started = await startEngine();
      engine = started.engine;
      const r = await collect(engine.generate(request(3)));
      const add = started.stages[0].received.find((m): m is AddRequest<EchoArgs> => m.type === 'add')!;
      expect(add.args.tokenIds.length).toBeGreaterThan(0);
      const tokens = r.events.flatMap((e) => (e.type === 'text' ? e.tokenIds : []));
      expect(tokens).toEqual([...add.args.tokenIds, ...add.args.tokenIds, ...add.args.tokenIds]);
      expect(r.done.finishReason).toBe('length');
      await waitFor('the echo stats section on main', () =>
        reports.some((m) => (echoStatsOf(m as { kind?: unknown }).echo?.echoes ?? 0) >= 3),
      );
    } finally {
      unsubscribe(channelNames.stageStats, onStats);
    }
  });

  it("hands main's kind message to its core through the stage loop: stop ends the request early", async () => {
    const started = await startEngine();
    engine = started.engine;
    const handle = engine.generate(request(1_000)); // 1,000 echoes 20 ms apart: stop comes long before the last
    let stopped = false;
    const r = await collect(handle, (e) => {
      if (e.type !== 'text' || stopped) return;
      stopped = true;
      started.stages[0].send(echoMessage.stop(handle.requestId)); // what the pool's send would carry
    });
    expect(r.done.finishReason).toBe('stop');
    expect(r.events.filter((e) => e.type === 'text').length).toBeLessThan(1_000);
  });

  it('bounds prompts by its own promptLimits: main refuses a longer prompt before any stage sees it', async () => {
    const started = await startEngine();
    engine = started.engine;
    const long = { ...request(1), messages: [{ role: 'user' as const, content: 'x'.repeat(ECHO_MAX_POSITIONS + 50) }] };
    expect(() => engine!.generate(long)).toThrow(
      expect.objectContaining({ code: 'CHORUS_ERR_CONTEXT_LENGTH_EXCEEDED', message: expect.stringContaining('200') }),
    );
    expect(started.stages[0].received.some((m) => m.type === 'add')).toBe(false);
    expect((await collect(engine.generate(request(1)))).done.finishReason).toBe('length');
  });
});
