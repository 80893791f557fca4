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
import { ROUTE_DEFAULTS, Router } from '../../src/engine/routing/Router.ts';
import { currentStepMs, frameStepMs, pathWaitMs } from '../../src/engine/routing/stepWait.ts';
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

describe('pathWaitMs', () => {
  it("takes the latest stage's step less the newcomer's own time before it, the least instance, no encoder", () => {
    const all = instances();
    const at = (id: string) => all.get(id)!;
    const entry = at('thinker#0').spec;
    at('thinker#0').stats = stats(16, 5, [5]);
    at('talker#0').stats = stats(16, 120, [100, 140]);
    at('code2wav#0').stats = stats(4, 8, [8]);
    at('audio-encoder#0').stats = stats(1, 500, [500]);
    // Its own first text at once: the Talker's step is the wait (summed, 5 + 120 + 8 = 133).
    expect(pathWaitMs(all.values(), entry, 0)).toEqual({ ttft: 5, ttfp: 120 });
    // 50 ms of its own prefill overlap the Talker's step; 200 ms cover it: the Thinker's step is all that is left.
    expect(pathWaitMs(all.values(), entry, 50)).toEqual({ ttft: 5, ttfp: 70 });
    expect(pathWaitMs(all.values(), entry, 200)).toEqual({ ttft: 5, ttfp: 5 });
    at('thinker#0').stats = stats(16, 300, [300]);
    expect(pathWaitMs(all.values(), entry, 50).ttfp).toBe(300); // the entry's step delays everything after it
    at('thinker#0').stats = stats(16, 5, [5]);
    // The pace of the frames: the Talker's step (the Thinker's tokens are several frames; Code2Wav is no AR stage).
    expect(frameStepMs(all.values(), entry)).toBe(120);
    // A second Talker, idle: routing takes it, so its nothing is the wait.
    const spare = newInstance(graph, at('talker#0').stageIndex, 1, 'talker#1');
    spare.status = 'ready';
    all.set(spare.instance, spare);
    expect(pathWaitMs(all.values(), entry, 0).ttfp).toBe(8);
    expect(frameStepMs(all.values(), entry)).toBe(0);
    spare.status = 'starting';
    expect(pathWaitMs(all.values(), entry, 0).ttfp).toBe(120); // not ready: not counted
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
      router.route(id, entry.stageId, graph.stages, prompt, (_s, pick) => pick(), true).book()!;
    // One alone teaches the charge: its first audio 200 ms after admission, idle stages.
    const first = route('first');
    first.firstToken(Date.now() + 50);
    first.firstAudio(Date.now() + 200);
    first.release();
    const idle = router.estimate(entry)!;
    // Four long answers, each past its first audio: no competitors, but the Talker's steps now take 150 ms.
    const long = ['a', 'b', 'c', 'd'].map(route);
    // Admitted together, each one's first audio 300 ms later than alone: 100 ms for each of the 3 others.
    for (const t of long) {
      t.firstToken(Date.now() + 50);
      t.firstAudio(Date.now() + 500);
    }
    const quick = router.estimate(entry)!;
    // Charged for itself alone, as the idle server's newcomer was (the answers moved the learned charge a little).
    expect(quick.ttfpMs!).toBeLessThan(1.5 * idle.ttfpMs!);
    all.get('talker#0')!.stats = stats(4, 150, [150]);
    const speaking = router.estimate(entry)!;
    // The Talker's step less the newcomer's own predicted prefill before it (a typical prompt, at most 50 positions
    // at the assumed rate: the repeated prompt's cached blocks are not computed).
    const prefillMs = (50 * 1000) / ROUTE_DEFAULTS.prefillTokensPerSecond;
    expect(speaking.ttfpMs! - quick.ttfpMs!).toBeLessThan(150);
    expect(speaking.ttfpMs! - quick.ttfpMs!).toBeGreaterThanOrEqual(150 - prefillMs);
    expect(speaking.ttftMs).toBeCloseTo(quick.ttftMs, 6); // the Thinker's steps are short: its first text is not
    // A competitor (admitted, no audio yet) is charged what each competitor lately added: about 100 ms (each one's
    // miss is over its own prediction, a few ms longer with the prompts queued ahead of it).
    const waiting = route('e');
    const behind = router.estimate(entry)!;
    expect(behind.ttfpMs! - speaking.ttfpMs!).toBeGreaterThan(90);
    expect(behind.ttfpMs! - speaking.ttfpMs!).toBeLessThan(125);
    for (const t of [...long, waiting]) t.release();
  });
});
