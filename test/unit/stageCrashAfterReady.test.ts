/**
 * The stage process body (src/worker/stageMain.ts runStageProcess) over an in-memory channel: a failure after READY is
 * a crash (the process exits 1 and main sees it die: its requests migrate, the stage restarts), never a `boot_failed`,
 * which says the model could not load and stops main from restarting the stage.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StageGraph, StageKind } from '../../src/common/graph.ts';
import type { ControlChannel } from '../../src/worker/ControlChannel.ts';
import type { MainToStage, StageToMain } from '../../src/worker/messages.ts';
import { runStageProcess } from '../../src/worker/stageMain.ts';
import { createStage, registerStageKind, stageKinds, unregisterStageKind } from '../../stages/registry.ts';
import { configWith } from '../helpers/engine.ts';
import { echo } from '../helpers/kinds/echo/descriptor.ts';

/** text-only.yaml with its one stage of the echo kind (no model, no edge: nothing to connect). */
function echoGraph(): StageGraph {
  const graph = configWith('text-only.yaml');
  const stages = graph.stages.map((s) => (s.stageId === graph.entryStageId ? { ...s, kind: 'echo' as StageKind } : s));
  return { ...graph, stages };
}

/** Main's end of the channel, in memory: what the stage posted, and a way to send it messages. */
function channelPair() {
  const posted: StageToMain[] = [];
  const handlers = new Set<(msg: MainToStage) => void>();
  let closedResolve!: () => void;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));
  const channel: ControlChannel<StageToMain, MainToStage> = {
    send: (msg) => (posted.push(msg), true),
    onMessage: (handler) => (handlers.add(handler), () => handlers.delete(handler)),
    onClose: () => {}, // the process body exits when main goes: here main never goes
    connected: true,
    close: () => closedResolve(),
  };
  const send = (msg: MainToStage) => [...handlers].forEach((h) => h(msg));
  return { channel, posted, send, closed };
}

beforeAll(() => {
  if (!Object.hasOwn(stageKinds, 'echo')) registerStageKind(echo);
});
afterAll(() => unregisterStageKind(echo.kind));
afterEach(() => {
  process.exitCode = undefined;
});

describe('a stage that fails after READY', () => {
  it('exits 1 without boot_failed (a crash main restarts), while a failure before READY is boot_failed', async () => {
    const graph = echoGraph();
    const stageIndex = graph.stages.findIndex((s) => s.stageId === graph.entryStageId);
    const boot = { type: 'boot' as const, graph, stageIndex, replica: 0, edges: [] };

    // After READY: the stage's model fails to close when it drains.
    const after = channelPair();
    runStageProcess(after.channel, async (ctx, g) => {
      const built = await createStage(ctx, g);
      return { ...built, close: () => Promise.reject(new Error('the model would not unload')) };
    });
    after.send(boot);
    await expect.poll(() => after.posted.map((m) => m.type)).toContain('ready');
    after.send({ type: 'shutdown', drainMs: 1_000 });
    await after.closed;
    expect(after.posted.map((m) => m.type)).not.toContain('boot_failed');
    expect(after.posted.map((m) => m.type)).not.toContain('drained');
    expect(process.exitCode).toBe(1);

    // Before READY: the model cannot load.
    process.exitCode = undefined;
    const before = channelPair();
    runStageProcess(before.channel, () => Promise.reject(new Error('no such model file')));
    before.send(boot);
    await before.closed;
    const failed = before.posted.find((m) => m.type === 'boot_failed');
    expect(failed).toMatchObject({ error: { code: 'CHORUS_ERR_STAGE_BOOT' } });
    expect(before.posted.map((m) => m.type)).not.toContain('ready');
    expect(process.exitCode).toBe(1);
  });
});
