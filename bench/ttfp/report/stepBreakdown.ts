/**
 * Where one request's first audio packet waited, from the stages' step traces (src/worker/StepTrace.ts): for each
 * stage, over the request's window (from its send to its first Code2Wav step's end), the time in the request's own
 * steps, in steps that did not include it, and idle. A stage busy with other requests' steps while this one waited
 * is a scheduling cost; own steps far slower than the runner alone is CPU contention. Pure: tested on hand-made
 * traces.
 */
import type { StepRecord } from '../../../src/basics.ts';

export interface StageSteps {
  /** Stage id (the trace file's instance, without the replica). */
  readonly stage: string;
  readonly steps: readonly StepRecord[];
}

export interface StageShare {
  readonly stage: string;
  readonly ownSteps: number;
  readonly ownMs: number;
  /** Positions the request took in its own steps (prompt tokens, tokens, frames). */
  readonly ownPositions: number;
  /** Batch sizes of the request's own steps (min-max). */
  readonly ownBatch: readonly [number, number];
  readonly otherSteps: number;
  readonly otherMs: number;
  readonly idleMs: number;
}

export interface Breakdown {
  readonly requestId: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly stages: readonly StageShare[];
  /** The request's own steps in time order: stage, offset from start, duration, batch size, positions. */
  readonly path: readonly { stage: string; atMs: number; ms: number; batch: number; positions: number }[];
}

const overlap = (a0: number, a1: number, b0: number, b1: number): number =>
  Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

/**
 * The breakdown of requestId's first packet: `endMs` (the traces' monotonic ms) is the end of its first step in
 * `lastStage`, and the window starts engineTtfpMs before it (the engine's own TTFP for the request, from
 * requests.json).
 */
export function firstPacketBreakdown(
  stages: readonly StageSteps[],
  requestId: string,
  lastStage: string,
  engineTtfpMs: number,
): Breakdown {
  const last = stages.find((s) => s.stage === lastStage);
  const firstOut = last?.steps.find((st) => st.items.some(([id]) => id === requestId));
  if (!firstOut) throw new Error(`no ${lastStage} step of ${requestId} in the traces`);
  const endMs = firstOut.t + firstOut.d;
  const startMs = endMs - engineTtfpMs;
  const path: Breakdown['path'][number][] = [];
  const shares = stages.map((s): StageShare => {
    let [ownSteps, ownMs, ownPositions, otherSteps, otherMs] = [0, 0, 0, 0, 0];
    let ownBatch: [number, number] = [0, 0];
    for (const st of s.steps) {
      const inWindow = overlap(st.t, st.t + st.d, startMs, endMs);
      if (inWindow <= 0) continue;
      const mine = st.items.find(([id]) => id === requestId);
      if (!mine) {
        otherSteps += 1;
        otherMs += inWindow;
        continue;
      }
      ownSteps += 1;
      ownMs += inWindow;
      ownPositions += mine[1];
      const b = st.items.length;
      ownBatch = ownSteps === 1 ? [b, b] : [Math.min(ownBatch[0], b), Math.max(ownBatch[1], b)];
      path.push({ stage: s.stage, atMs: st.t - startMs, ms: st.d, batch: b, positions: mine[1] });
    }
    const idleMs = Math.max(0, endMs - startMs - ownMs - otherMs);
    return { stage: s.stage, ownSteps, ownMs, ownPositions, ownBatch, otherSteps, otherMs, idleMs };
  });
  path.sort((a, b) => a.atMs - b.atMs);
  return { requestId, startMs, endMs, stages: shares, path };
}

export function formatBreakdown(b: Breakdown): string {
  const f = (x: number) => x.toFixed(1);
  const lines = [`${b.requestId}: first packet ${f(b.endMs - b.startMs)} ms after the request reached the engine`];
  lines.push("stage       own steps (ms, batch, positions)      others' steps (ms)   idle (ms)");
  for (const s of b.stages) {
    const own = `${s.ownSteps} (${f(s.ownMs)} ms, batch ${s.ownBatch[0]}-${s.ownBatch[1]}, ${s.ownPositions})`;
    lines.push(
      `${s.stage.padEnd(11)} ${own.padEnd(37)} ${`${s.otherSteps} (${f(s.otherMs)})`.padEnd(20)} ${f(s.idleMs)}`,
    );
  }
  lines.push('its own steps:');
  for (const p of b.path) {
    const at = `+${f(p.atMs).padStart(7)} ms`;
    lines.push(`  ${at}  ${p.stage.padEnd(9)} ${f(p.ms).padStart(6)} ms  batch ${p.batch}, ${p.positions}`);
  }
  return lines.join('\n');
}
