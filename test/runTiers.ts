/**
 * `npm test`'s vitest part: each tier of vitest.config.ts in turn, then the ALONE files (vitest.alone.config.ts),
 * each timed; a summary of every tier's duration and outcome at the end, and exit 1 if any tier failed (every tier
 * runs, so one run shows every failure).
 */
import { spawnSync } from 'node:child_process';
import { TIERS } from '../vitest.config.ts';

const runs: { name: string; args: string[] }[] = [
  ...Object.keys(TIERS).map((name) => ({ name, args: ['run', '--project', name] })),
  { name: 'alone', args: ['run', '--config', 'vitest.alone.config.ts'] },
];
const rows: string[] = [];
const started = performance.now();
const failed: string[] = [];
for (const run of runs) {
  const t0 = performance.now();
  const result = spawnSync('npx', ['vitest', ...run.args], { stdio: 'inherit' });
  const seconds = (performance.now() - t0) / 1000;
  const ok = result.status === 0;
  rows.push(`  ${run.name.padEnd(8)} ${seconds.toFixed(0).padStart(5)} s  ${ok ? 'passed' : 'FAILED'}`);
  if (!ok) failed.push(run.name);
}
console.log(`\ntest tiers (vitest):\n${rows.join('\n')}`);
console.log(`  total    ${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s`);
if (failed.length > 0) {
  console.log(`failed tiers: ${failed.join(', ')}`);
  process.exit(1);
}
