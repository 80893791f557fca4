/**
 * A stage instance's step trace (src/worker/StepTrace.ts) writing into a temp dir for one test, closed and removed
 * when the test finishes, and the lines its file holds so far.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { STEP_TRACE_ENV, StepTrace } from '../../src/worker/StepTrace.ts';
import { tempDir } from './tempDir.ts';

export function stepTraceFile(instance: string): { trace: StepTrace; file: string; lines: () => string[] } {
  const dir = tempDir('steps');
  const trace = StepTrace.fromEnv(instance, { [STEP_TRACE_ENV]: dir })!;
  onTestFinished(() => trace.close());
  const file = path.join(dir, `${instance.replace('#', '_')}-${process.pid}.jsonl`);
  const lines = () =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  return { trace, file, lines };
}
