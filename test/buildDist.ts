/**
 * Global setup of the tiers that start `chorus` as a command, stage processes or helper threads (model, e2e, ALONE):
 * builds dist/ from the sources and sets CHORUS_COMPILED=1 for the tests (vitest.config.ts), so every
 * `node bin/chorus.js` they start, and every stage process it forks, runs the compiled JavaScript the package ships
 * instead of the sources through tsx: half the CPU of a deployment's boot (tsx's loader in each process). In-process
 * servers (the test's own process runs the sources) fork their stages from dist/ too (src/common/moduleFile.ts
 * childModuleFile: 16% of runtime.test.ts's CPU), and start their helper threads from it (workerEntry: a redis
 * connector's I/O thread, of which the transport tests open dozens). The source path stays
 * tested: a test that is about running from the clone (test/e2e/shutdown.test.ts) sets CHORUS_COMPILED=0 for its
 * command, whose stages then run through tsx.
 *
 * `tsc -b`, not `-p`: build mode sees from the sources' timestamps and hashes against dist/.tsbuildinfo that nothing
 * changed without building the program (0.5 s against 15 s wall, 9.6 s of CPU, for `-p`'s incremental no-op), and
 * each tier's setup builds again. `--noCheck`: emit only. The type check is `tsc --noEmit` (`npm test`'s first step),
 * and with isolatedModules every file's JavaScript is the same unchecked; a build from scratch (CI's first tier) took
 * 20 s of CPU against 38 s checked.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const TSC = [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', 'tsconfig.build.json', '--noCheck'];

export default function setup(): void {
  execFileSync(process.execPath, TSC, { cwd: ROOT, stdio: 'inherit' });
}

/**
 * The same build started in the background, settled when it ends whatever its outcome: test/runTiers.ts builds beside
 * the unit tier (which runs the sources), so the first compiled tier's setup finds nothing left to build (or, had this
 * build failed, builds again and fails the tier with tsc's errors).
 */
export function buildInBackground(): Promise<void> {
  const child = spawn(process.execPath, TSC, { cwd: ROOT, stdio: 'inherit' });
  return new Promise((resolve) => {
    child.once('error', () => resolve());
    child.once('exit', () => resolve());
  });
}
