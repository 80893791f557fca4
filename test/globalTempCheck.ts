/**
 * Fails the run when tests leave chorus-* entries in the system temp dir: every test that makes one must remove it
 * (test/helpers/tempDir.ts does it for you). Also onnxruntime's telemetry log (mat-debug-<pid>.log), which a process
 * writes there when it opens a model with the telemetry on: src/common/onnxTelemetry.ts turns it off for every session.
 */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';

const ours = () =>
  new Set(readdirSync(tmpdir()).filter((name) => name.startsWith('chorus-') || name.startsWith('mat-debug-')));

export default function setup(): () => void {
  const before = ours();
  return () => {
    const left = [...ours()].filter((name) => !before.has(name));
    if (left.length === 0) return;
    // Vitest runs global teardown after it has settled the exit code and only logs a throw ("error during close"),
    // so the failure has to be set here to fail the run.
    process.exitCode = 1;
    throw new Error(`tests left ${left.length} temp entries in ${tmpdir()}: ${left.join(', ')}`);
  };
}
