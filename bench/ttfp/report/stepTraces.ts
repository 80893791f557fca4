/**
 * Reads the step traces `chorus bench --trace-steps DIR` leaves (src/worker/StepTrace.ts): one JSONL file per stage
 * process, `<instance>-<pid>.jsonl`, merged per stage id (replicas and the processes of several runs together: their
 * steps do not overlap in time) and sorted by start.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { StepRecord } from '../../../src/basics.ts';
import type { StageSteps } from './stepBreakdown.ts';

export async function readStepTraces(dir: string): Promise<StageSteps[]> {
  const byStage = new Map<string, StepRecord[]>();
  for (const file of await readdir(dir)) {
    const m = /^(.*)_\d+-\d+\.jsonl$/.exec(file);
    if (!m) continue;
    const steps = byStage.get(m[1]) ?? [];
    for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n'))
      if (line) steps.push(JSON.parse(line) as StepRecord);
    byStage.set(m[1], steps);
  }
  return [...byStage].map(([stage, steps]) => ({ stage, steps: steps.sort((a, b) => a.t - b.t) }));
}
