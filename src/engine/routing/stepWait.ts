/**
 * What the steps already running cost a newcomer, for admission's estimate (Router.estimate, LiveCost.ts). A stage
 * process runs one step at a time: a request's input that arrives during a step waits for it to end before its own
 * work starts, at every stage on its way to its first packet. With sixteen long answers decoding, a Talker step of
 * 17 took 35-150 ms at load 15-31 (bench/README.md, "Long answers and newcomers"), against 2 ms for a step of one:
 * that wait is most of a newcomer's first audio, and it is measured now, in each stage's latest report, so it rises
 * the moment the running work (or the machine's load) slows the steps, before any first packet shows it.
 */
import type { StageSpec } from '../../common/graph.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import type { StageStats } from '../../worker/stageStats.ts';
import type { InstanceView } from '../pool/StageInstance.ts';

/**
 * A stage instance's current step (ms) as its latest report tells it: the mean of the steps it ran since the report
 * before (a batch, under the CPU of the moment); when it ran none but holds requests, its last step (one step longer
 * than the report interval: the report waited for it); idle, 0.
 */
export function currentStepMs(stats: StageStats | null): number {
  if (!stats) return 0;
  const steps = stats.steps ?? [];
  if (steps.length > 0) return steps.reduce((sum, s) => sum + s.ms, 0) / steps.length;
  return stats.running > 0 ? stats.stepMs : 0;
}

/**
 * The steps in progress a request waits for on its way through `stages` (all but the encoders when 'all'): at each
 * stage the least of its ready instances' current steps (routing takes the least loaded), summed over the stages (a
 * request passes them one after another).
 */
export function inProgressStepsMs(instances: Iterable<InstanceView>, stages: readonly StageSpec[] | 'all'): number {
  const least = new Map<StageSpec, number>();
  for (const view of instances) {
    if (view.status !== 'ready' || view.spec.encoder) continue;
    if (stages !== 'all' && !stages.includes(view.spec)) continue;
    least.set(view.spec, Math.min(least.get(view.spec) ?? Infinity, currentStepMs(view.stats)));
  }
  let sum = 0;
  for (const ms of least.values()) sum += ms;
  return sum;
}

/**
 * The step (ms) of the slowest autoregressive stage after `entry` (the Talker: each step makes one frame for each
 * request it seats), at its least-stepping ready instance: spoken answers keep up with playback while it stays below
 * a frame's duration. The entry stage (the Thinker) is not counted: a token is several frames, and its text runs
 * ahead of the audio.
 */
export function frameStepMs(instances: Iterable<InstanceView>, entry: StageSpec): number {
  const least = new Map<StageSpec, number>();
  for (const view of instances) {
    if (view.status !== 'ready' || view.spec === entry || view.spec.encoder) continue;
    if (descriptorOf(view.spec.kind).workerType !== 'ar') continue;
    least.set(view.spec, Math.min(least.get(view.spec) ?? Infinity, currentStepMs(view.stats)));
  }
  return Math.max(0, ...least.values());
}
