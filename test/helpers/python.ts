/**
 * Python reference scripts (the GGUF, Whisper and Piper tests check Chorus against the packages those models are
 * made for), started beside the test's own work rather than before it: the interpreter's start, its imports and its
 * model load run on the other core while the test loads and runs its own side, and the test awaits the reference
 * only to compare. A script that loads its model from its arguments before it reads its job (stdin) gets that
 * overlap even when the job is still being computed (a promise: written to stdin once it resolves).
 *
 * Large data goes by files, not the pipes: while the test's own side computes synchronously (onnxruntime-node runs on
 * the JS thread) its event loop neither writes stdin nor reads stdout, and a script blocked on a full pipe would wait
 * for it; stdin and stdout carry only small JSON.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pythonCommand } from '../../stages/thinker/gguf/pythonPackageFile.ts';

/**
 * Runs `script` with `args`, `job` as JSON on stdin (once it resolves, if a promise); resolves the script's parsed
 * JSON stdout. The promise is safe to leave unawaited while the test computes (a failure is reported where awaited).
 */
export function runPython<T>(script: string, job: unknown, args: readonly string[] = []): Promise<T> {
  // One BLAS thread: a reference is many small products, and threads fighting the suite's workers for two cores
  // made the GGUF one ~10x slower.
  const env = { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
  const child = spawn(pythonCommand(), [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env });
  const result = new Promise<T>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${script} exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as T);
    });
    // EPIPE when the script died before reading its job: its exit (above) says why.
    child.stdin.on('error', () => {});
    // A job at hand is written now (a pipe takes small JSON at once), not a microtask later: the test may go on to
    // load its own model synchronously, and the script would wait for its job all that time.
    if (!(job instanceof Promise)) child.stdin.end(JSON.stringify(job));
    else
      job.then(
        (value) => child.stdin.end(JSON.stringify(value)),
        (cause: unknown) => {
          child.kill('SIGKILL');
          reject(new Error(`${script}: its job could not be made`, { cause }));
        },
      );
  });
  result.catch(() => {});
  return result;
}

/** A temporary folder for a script's binary output, removed by cleanup(). */
export function scratchDir(): { dir: string; read(name: string): Float32Array; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-python-'));
  return {
    dir,
    read: (name) => {
      const bytes = readFileSync(join(dir, name));
      return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)); // aligned
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
