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
import type { PathWaitMs } from './LiveCost.ts';

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
 * The steps in progress a request admitted now waits for, beyond its own work (ms): to its first text, the entry
 * stage's; to its first audio, the later of each stage's (all but the encoders), less the request's own time before
 * it reaches that stage. At each stage the least of its ready instances' current steps counts (routing takes the least
 * loaded), taken as just begun (the worst case).
 *
 * The waits overlap, they do not add up: the steps in progress run while the newcomer does its own work upstream.
 * It reaches a stage after `upstreamMs` of its own (the Thinker's prefill, its predicted first text, the least of
 * what comes before any later stage); a step in progress there ends `step` after admission, so it delays the
 * newcomer by what is left of it then, `step - upstreamMs` or nothing. The finish of a chain of stages is the latest
 * of these (each stage's wait, then the own work after it), so the first audio waits for the largest of them, not
 * their sum: summed, the assistant pipeline's tts step in progress (~660 ms on a loaded machine) was charged in full
 * beside a Thinker whose own first text (predicted at ~1.1 s) overlapped it.
 */
export function pathWaitMs(instances: Iterable<InstanceView>, entry: StageSpec, upstreamMs: number): PathWaitMs {
  const least = new Map<StageSpec, number>();
  for (const view of instances) {
    if (view.status !== 'ready' || view.spec.encoder) continue;
    least.set(view.spec, Math.min(least.get(view.spec) ?? Infinity, currentStepMs(view.stats)));
  }
  const atEntry = least.get(entry) ?? 0;
  let ttfp = atEntry;
  for (const [spec, ms] of least) if (spec !== entry) ttfp = Math.max(ttfp, ms - Math.max(0, upstreamMs));
  return { ttft: atEntry, ttfp };
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
