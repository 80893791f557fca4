/**
 * Builds (on first use) or loads an encoder and returns its runner: the encoder counterpart of
 * stages/runners.ts. A generated encoder comes from its spec (ensureEncoderModel); a file is a
 * bring-your-own ONNX with the names in stages/models/encoderSignature.ts.
 */
import type { EngineArgs } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { ensureEncoderModel, type EncoderModelSpec } from './ensureEncoderModel.ts';
import { ensureModel, type ModelBuildProgress } from '../models/ensureModel.ts';
import { OnnxEncoderRunner } from './EncoderRunner.ts';
import { AUDIO_ENCODER_WINDOW_FRAMES } from './audioEncoderModel.ts';
import type { Modality } from '../../src/media/types.ts';

export interface FileEncoderSpec {
  readonly source: 'file';
  readonly path: string;
  readonly modality: Modality;
}

export type EncoderSpec = EncoderModelSpec | FileEncoderSpec;

export interface CreateEncoderRunnerOptions {
  readonly engine?: Pick<EngineArgs, 'threads'>;
  readonly onProgress?: (p: ModelBuildProgress) => void;
}

export async function createEncoderRunner(
  spec: EncoderSpec,
  modelsDir: string,
  options: CreateEncoderRunnerOptions = {},
): Promise<OnnxEncoderRunner> {
  const engine = options.engine ?? { threads: 1 };
  if (spec.source === 'file') {
    const files = await ensureModel({ source: 'file', path: spec.path }, modelsDir);
    return OnnxEncoderRunner.load(files, { modality: spec.modality }, engine);
  }
  if (spec.size.outputSize <= 0)
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `${spec.kind} outputSize must be the thinker's hidden size, got ${spec.size.outputSize}`,
    );
  const files = await ensureEncoderModel(spec, modelsDir, options.onProgress);
  if (spec.kind === 'audio_encoder')
    return OnnxEncoderRunner.load(files, { modality: 'audio', windowFrames: AUDIO_ENCODER_WINDOW_FRAMES }, engine);
  // The generated vision encoder is fed as Qwen2-VL's tower attends: a clip's temporal groups apart.
  return OnnxEncoderRunner.load(
    files,
    { modality: 'image', mergeSize: spec.size.mergeSize, clipInGroups: true },
    engine,
  );
}
