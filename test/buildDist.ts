/**
 * Global setup of the tiers that start `chorus` as a command, stage processes or helper threads (model, e2e, ALONE):
 * builds dist/ from the sources (tsc's incremental build: seconds when nothing changed) and sets CHORUS_COMPILED=1 for
 * the tests (vitest.config.ts), so every `node bin/chorus.js` they start, and every stage process it forks, runs the
 * compiled JavaScript the package ships instead of the sources through tsx: half the CPU of a deployment's boot (tsx's
 * loader in each process). In-process servers (the test's own process runs the sources) fork their stages from dist/
 * too (src/common/moduleFile.ts childModuleFile: 16% of runtime.test.ts's CPU), and start their helper threads from it
 * (workerEntry: a redis connector's I/O thread, of which the transport tests open dozens). The source path stays
 * tested: a test that is about running from the clone (test/e2e/shutdown.test.ts) sets CHORUS_COMPILED=0 for its
 * command, whose stages then run through tsx.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

export default function setup(): void {
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: 'inherit',
    },
  );
}
