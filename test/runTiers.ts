/**
 * `npm test`'s vitest part: each tier of vitest.config.ts in turn, then the ALONE files (vitest.alone.config.ts),
 * each timed; a summary of every tier's duration and outcome at the end, with the slowest files of the whole run
 * (where the suite's time goes, in the last lines a CI log shows), and exit 1 if any tier failed (every tier runs,
 * so one run shows every failure).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TIERS } from '../vitest.config.ts';
import { buildInBackground } from './buildDist.ts';

const SLOWEST = 12;

const runs: { name: string; args: string[] }[] = [
  ...Object.keys(TIERS).map((name) => ({ name, args: ['run', '--project', name] })),
  { name: 'alone', args: ['run', '--config', 'vitest.alone.config.ts'] },
];
const reports = mkdtempSync(path.join(os.tmpdir(), 'chorus-tiers-'));
const rows: string[] = [];
const files: { file: string; seconds: number }[] = [];
const started = performance.now();
const failed: string[] = [];
// dist/ for the compiled tiers (test/buildDist.ts, their setup) is built beside the first tier, the unit tests, which
// run the sources and leave a core idle for a third of their time: on a fresh clone the build is ~19 s of one core
// that the model tier's setup waited for with the other core idle (bench/NOTES.md, "Suite time: the build beside the
// unit tier, the pack's check"). Its setup then finds nothing to build; had this build failed, it builds again and
// fails the tier with tsc's errors.
const built = buildInBackground();
for (const [i, run] of runs.entries()) {
  const t0 = performance.now();
  if (i === 1) await built;
  const json = path.join(reports, `${run.name}.json`);
  const reporters = ['--reporter=default', '--reporter=json', `--outputFile.json=${json}`];
  const result = spawnSync('npx', ['vitest', ...run.args, ...reporters], { stdio: 'inherit' });
  const seconds = (performance.now() - t0) / 1000;
  const ok = result.status === 0;
  rows.push(`  ${run.name.padEnd(8)} ${seconds.toFixed(0).padStart(5)} s  ${ok ? 'passed' : 'FAILED'}`);
  if (!ok) failed.push(run.name);
  files.push(...fileTimes(json));
}
rmSync(reports, { recursive: true, force: true });
const slowest = files.sort((a, b) => b.seconds - a.seconds).slice(0, SLOWEST);
console.log(`\nslowest test files (s, each file's own time; files of a tier run side by side):`);
for (const f of slowest) console.log(`  ${f.seconds.toFixed(1).padStart(6)}  ${f.file}`);
console.log(`\ntest tiers (vitest):\n${rows.join('\n')}`);
console.log(`  total    ${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s`);
if (failed.length > 0) {
  console.log(`failed tiers: ${failed.join(', ')}`);
  process.exit(1);
}

/** Each file's time from a vitest JSON report (none when the tier failed before writing one). */
function fileTimes(json: string): { file: string; seconds: number }[] {
  let report: { testResults?: { name: string; startTime: number; endTime: number }[] };
  try {
    report = JSON.parse(readFileSync(json, 'utf8')) as typeof report;
  } catch {
    return [];
  }
  return (report.testResults ?? []).map((r) => ({
    file: path.relative(process.cwd(), r.name),
    seconds: (r.endTime - r.startTime) / 1000,
  }));
}
