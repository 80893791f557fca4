/**
 * What the steps already running cost a newcomer (src/engine/routing/stepWait.ts), and the router's estimate with
 * them: long answers decoding make the Talker's steps long, and a newcomer's first audio waits for the one in
 * progress, while the answers themselves, past their first audio, are no competitors for its place.
 */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StageGraph } from '../../src/common/graph.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { newInstance, type StageInstance } from '../../src/engine/pool/StageInstance.ts';
import { Router } from '../../src/engine/routing/Router.ts';
import { currentStepMs, frameStepMs, inProgressStepsMs } from '../../src/engine/routing/stepWait.ts';
import type { StageStats } from '../../src/worker/stageStats.ts';

const stats = (running: number, stepMs: number, steps: number[]): StageStats => ({
  queueDepth: 0,
  running,
  batchSize: running,
  stepMs,
  batchSizes: steps.map(() => running),
  edgeSamples: [],
  steps: steps.map((ms) => ({ phase: 'decode', ms })),
});

let graph: StageGraph;
beforeAll(async () => {
  graph = await loadConfig(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'));
});

function instances(): Map<string, StageInstance> {
  const all = new Map<string, StageInstance>();
  graph.stages.forEach((spec, index) => {
    const view = newInstance(graph, index, 0, `${spec.stageId}#0`);
    view.status = 'ready';
    all.set(view.instance, view);
  });
  return all;
}

describe('currentStepMs', () => {
  it("is the mean of the report's steps, the last step when it ran none but holds requests, else 0", () => {
    expect(currentStepMs(null)).toBe(0);
    expect(currentStepMs(stats(16, 90, [40, 60, 80]))).toBe(60);
    expect(currentStepMs(stats(16, 300, []))).toBe(300); // one step longer than the report interval
    expect(currentStepMs(stats(0, 300, []))).toBe(0); // idle
  });
});

describe('inProgressStepsMs', () => {
  it('sums the stages a request passes, the least of each stage, no encoder', () => {
    const all = instances();
    const at = (id: string) => all.get(id)!;
    at('thinker#0').stats = stats(16, 5, [5]);
    at('talker#0').stats = stats(16, 120, [100, 140]);
    at('code2wav#0').stats = stats(4, 8, [8]);
    at('audio-encoder#0').stats = stats(1, 500, [500]);
    expect(inProgressStepsMs(all.values(), 'all')).toBe(5 + 120 + 8);
    expect(inProgressStepsMs(all.values(), [at('thinker#0').spec])).toBe(5);
    // The pace of the frames: the Talker's step (the Thinker's tokens are several frames; Code2Wav is no AR stage).
    expect(frameStepMs(all.values(), at('thinker#0').spec)).toBe(120);
    // A second Talker, idle: routing takes it, so its nothing is the wait.
    const spare = newInstance(graph, at('talker#0').stageIndex, 1, 'talker#1');
    spare.status = 'ready';
    all.set(spare.instance, spare);
    expect(inProgressStepsMs(all.values(), 'all')).toBe(5 + 8);
    expect(frameStepMs(all.values(), at('thinker#0').spec)).toBe(0);
    spare.status = 'starting';
    expect(inProgressStepsMs(all.values(), 'all')).toBe(5 + 120 + 8); // not ready: not counted
  });
});

describe('Router.estimate with answers speaking', () => {
  afterEach(() => vi.useRealTimers());

  it("charges a newcomer's first audio the steps in progress, and the answers past their first audio no more", () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const all = instances();
    const entry = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
    const router = new Router('ttft', all);
    const prompt = { promptTokenIds: new Array<number>(50).fill(7), items: [], spans: [] };
    const route = (id: string) =>
      router.route(id, entry.stageId, graph.stages, prompt, (_s, pick) => pick(), true).ticket!;
    // One alone teaches the charge: its first audio 200 ms after admission, idle stages.
    const first = route('first');
    first.firstToken(Date.now() + 50);
    first.firstAudio(Date.now() + 200);
    first.release();
    const idle = router.estimate(entry)!;
    // Four long answers, each past its first audio: no competitors, but the Talker's steps now take 150 ms.
    const long = ['a', 'b', 'c', 'd'].map(route);
    for (const t of long) {
      t.firstToken(Date.now() + 50);
      t.firstAudio(Date.now() + 200);
    }
    const quick = router.estimate(entry)!;
    // Charged for itself alone, as the idle server's newcomer was (the answers moved the learned charge a little).
    expect(quick.ttfpMs!).toBeLessThan(1.5 * idle.ttfpMs!);
    all.get('talker#0')!.stats = stats(4, 150, [150]);
    const speaking = router.estimate(entry)!;
    expect(speaking.ttfpMs! - quick.ttfpMs!).toBeCloseTo(150, 6);
    expect(speaking.ttftMs).toBeCloseTo(quick.ttftMs, 6); // the Thinker's steps are short: its first text is not
    // A competitor (admitted, no audio yet) is charged what the last ones missed.
    const waiting = route('e');
    const behind = router.estimate(entry)!;
    expect(behind.ttfpMs!).toBeGreaterThan(speaking.ttfpMs! + 100);
    for (const t of [...long, waiting]) t.release();
  });
});
