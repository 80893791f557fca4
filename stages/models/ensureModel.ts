/**
 * A stage's model files: a bring-your-own file as it is, or a generated model from the folder cache
 * (modelCache.ts), built on first use by the generator of its kind.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { GeneratedModelSpec, ModelSpec } from '../../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { buildCode2Wav } from '../code2wav/code2wavModel.ts';
import { buildTalker } from '../talker/talkerModel.ts';
import { buildThinker } from '../thinker/thinkerModel.ts';
import { ensureEncoderModel } from '../encoder/ensureEncoderModel.ts';
import {
  ensureGeneratedModel,
  type BuildProgressStep,
  type BuiltFiles,
  type ModelBuildProgress,
  type ModelFiles,
} from './modelCache.ts';
import { importGguf } from '../thinker/gguf/importGguf.ts';

export {
  ensureGeneratedModel,
  GENERATOR_VERSION,
  modelDirName,
  type GeneratedModelRecipe,
  type ModelBuildProgress,
  type ModelFiles,
  type ModelKind,
  type ModelManifest,
} from './modelCache.ts';

export async function ensureModel(
  spec: ModelSpec,
  modelsDir: string,
  onProgress?: (p: ModelBuildProgress) => void,
): Promise<ModelFiles> {
  if (spec.source === 'file') {
    if (spec.gguf !== undefined && !existsSync(spec.path)) {
      // A GGUF Thinker loaded without loadConfig (which imports first): import it here, into the same folder.
      await importGguf(spec.gguf, modelsDir, (step) => onProgress?.({ kind: 'thinker', ...step }));
    }
    if (!existsSync(spec.path)) {
      throw new ChorusError(
        ErrorCodes.MODEL_LOAD,
        `model file ${spec.path} does not exist: fix model.path in the stage config`,
      );
    }
    return { source: 'file', dir: dirname(spec.path), files: { model: spec.path }, manifest: null, built: false };
  }
  if (spec.kind === 'audio_encoder' || spec.kind === 'vision_encoder')
    return ensureEncoderModel(spec, modelsDir, onProgress);
  return ensureGeneratedModel({ ...spec, build: (progress) => generate(spec, progress) }, modelsDir, onProgress);
}

function generate(
  spec: Exclude<GeneratedModelSpec, { kind: 'audio_encoder' | 'vision_encoder' }>,
  progress: (s: BuildProgressStep) => void,
): Promise<BuiltFiles> {
  switch (spec.kind) {
    case 'thinker':
      return buildThinker(spec.size, spec.seed, progress);
    case 'talker':
      return buildTalker(spec.size, spec.seed, progress);
    case 'code2wav':
      return buildCode2Wav(spec.size, spec.seed, progress);
  }
}

/** Total bytes of a model's files on disk. */
export async function modelBytes(files: ModelFiles): Promise<number> {
  let total = 0;
  for (const path of Object.values(files.files)) total += (await stat(path)).size;
  return total;
}
