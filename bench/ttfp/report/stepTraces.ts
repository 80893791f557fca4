/**
 * Reads the step traces `chorus bench --trace-steps DIR` leaves (src/worker/StepTrace.ts): one JSONL file per stage
 * process, `<instance>-<pid>.jsonl`, each line a step or a mark on a request's path. readStepTraces merges the steps
 * per stage id (replicas and the processes of several runs together: their steps do not overlap in time), sorted by
 * start; readProcessTraces keeps each process apart, with its marks (the first-packet account, ../account/).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { MarkRecord, StepRecord } from '../../../src/basics.ts';
import type { ProcessTrace } from '../account/packetAccount.ts';
import type { StageSteps } from './stepBreakdown.ts';

export async function readProcessTraces(dir: string): Promise<ProcessTrace[]> {
  const out: ProcessTrace[] = [];
  for (const file of (await readdir(dir)).sort()) {
    const m = /^(.*)_\d+-\d+\.jsonl$/.exec(file);
    if (!m) continue;
    const steps: StepRecord[] = [];
    const marks: MarkRecord[] = [];
    for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) {
      if (!line) continue;
      const rec = JSON.parse(line) as StepRecord | MarkRecord;
      if ('m' in rec) marks.push(rec);
      else steps.push(rec);
    }
    steps.sort((a, b) => a.t - b.t);
    marks.sort((a, b) => a.t - b.t);
    out.push({ stage: m[1], file, steps, marks });
  }
  return out;
}

export async function readStepTraces(dir: string): Promise<StageSteps[]> {
  const byStage = new Map<string, StepRecord[]>();
  for (const p of await readProcessTraces(dir)) byStage.set(p.stage, [...(byStage.get(p.stage) ?? []), ...p.steps]);
  return [...byStage].map(([stage, steps]) => ({ stage, steps: steps.sort((a, b) => a.t - b.t) }));
}
