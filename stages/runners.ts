/**
 * Builds (on first use) or loads a stage's model and returns its runner. Everything a stage process needs
 * from the model layer starts here.
 */
import type { EngineArgs, StageKind } from '../src/common/graph.ts';
import type { ModelSpec } from '../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import { OnnxCode2WavRunner } from './code2wav/OnnxCode2WavRunner.ts';
import { ensureModel, type ModelBuildProgress } from './models/ensureModel.ts';
import { OnnxTalkerRunner } from './talker/OnnxTalkerRunner.ts';
import { OnnxThinkerRunner } from './thinker/OnnxThinkerRunner.ts';
import type { Code2WavRunner, TalkerRunner, ThinkerRunner } from './types.ts';

/** The part of a StageSpec the runners read (a whole StageSpec fits). */
export interface RunnerStageSpec {
  readonly stageId?: string;
  readonly model: ModelSpec;
  readonly engine?: Pick<EngineArgs, 'threads'>;
}

export interface CreateRunnerOptions {
  readonly onProgress?: (p: ModelBuildProgress) => void;
}

const DEFAULT_ENGINE = { threads: 1 };

function checkKind(stage: RunnerStageSpec, kind: StageKind): void {
  const m = stage.model;
  if (m.source === 'generated' && m.kind !== kind) {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `stage ${stage.stageId ?? '?'} is a ${kind} stage but its generated model is a ${m.kind}`,
    );
  }
}

export async function createThinkerRunner(
  stage: RunnerStageSpec,
  modelsDir: string,
  options: CreateRunnerOptions = {},
): Promise<ThinkerRunner> {
  checkKind(stage, 'thinker');
  const files = await ensureModel(stage.model, modelsDir, options.onProgress);
  return OnnxThinkerRunner.load(files, stage.model, stage.engine ?? DEFAULT_ENGINE);
}

export async function createTalkerRunner(
  stage: RunnerStageSpec,
  modelsDir: string,
  options: CreateRunnerOptions = {},
): Promise<TalkerRunner> {
  checkKind(stage, 'talker');
  const files = await ensureModel(stage.model, modelsDir, options.onProgress);
  return OnnxTalkerRunner.load(files, stage.model, stage.engine ?? DEFAULT_ENGINE);
}

export async function createCode2WavRunner(
  stage: RunnerStageSpec,
  modelsDir: string,
  options: CreateRunnerOptions = {},
): Promise<Code2WavRunner> {
  checkKind(stage, 'code2wav');
  const files = await ensureModel(stage.model, modelsDir, options.onProgress);
  return OnnxCode2WavRunner.load(files, stage.model, stage.engine ?? DEFAULT_ENGINE);
}
