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
const failures: string[] = [];
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
  const report = readReport(json);
  files.push(...report.files);
  failures.push(...report.failures.map((f) => `  ${run.name}: ${f}`));
}
rmSync(reports, { recursive: true, force: true });
const slowest = files.sort((a, b) => b.seconds - a.seconds).slice(0, SLOWEST);
console.log(`\nslowest test files (s, each file's own time; files of a tier run side by side):`);
for (const f of slowest) console.log(`  ${f.seconds.toFixed(1).padStart(6)}  ${f.file}`);
console.log(`\ntest tiers (vitest):\n${rows.join('\n')}`);
console.log(`  total    ${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s`);
if (failed.length > 0) {
  // The failed tests again, last: a CI log is often read from its tail, far below the tier's own account of them.
  if (failures.length > 0) console.log(`\nfailed tests:\n${failures.join('\n')}`);
  console.log(`failed tiers: ${failed.join(', ')}`);
  process.exit(1);
}

interface Report {
  testResults?: {
    name: string;
    startTime: number;
    endTime: number;
    status: string;
    message?: string;
    assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

/**
 * Each file's time from a vitest JSON report, and each failed test as a line (its file, its name, the first line of
 * its error); nothing when the tier failed before writing one.
 */
function readReport(json: string): { files: { file: string; seconds: number }[]; failures: string[] } {
  let report: Report;
  try {
    report = JSON.parse(readFileSync(json, 'utf8')) as Report;
  } catch {
    return { files: [], failures: [] };
  }
  const results = report.testResults ?? [];
  const failures: string[] = [];
  for (const r of results) {
    const file = path.relative(process.cwd(), r.name);
    const failedTests = (r.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failedTests) failures.push(`${file} > ${a.fullName}: ${firstLine(a.failureMessages?.[0])}`);
    // A file that failed outside its tests (an import, a hook) has no failed test to name.
    if (r.status === 'failed' && failedTests.length === 0) failures.push(`${file}: ${firstLine(r.message)}`);
  }
  const files = results.map((r) => ({
    file: path.relative(process.cwd(), r.name),
    seconds: (r.endTime - r.startTime) / 1000,
  }));
  return { files, failures };
}

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n', 1)[0]!.slice(0, 300);
}
