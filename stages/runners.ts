/**
 * Builds (on first use) or loads a stage's model and returns its runner. Everything a stage process needs
 * from the model layer starts here.
 */
import type { StageKind } from '../src/common/graph.ts';
import type { ModelSpec } from '../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import { OnnxCode2WavRunner } from './code2wav/OnnxCode2WavRunner.ts';
import { ensureModel, type ModelBuildProgress, type ModelFiles } from './models/ensureModel.ts';
import { OnnxTalkerRunner } from './talker/OnnxTalkerRunner.ts';
import { OnnxThinkerRunner } from './thinker/OnnxThinkerRunner.ts';
import type { Code2WavRunner, RunnerEngine, TalkerRunner, ThinkerRunner } from './types.ts';

/** The part of a StageSpec the runners read (a whole StageSpec fits). */
export interface RunnerStageSpec {
  readonly stageId?: string;
  readonly model: ModelSpec;
  readonly engine?: RunnerEngine;
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

/** Builds (on first use) or finds the stage's model and loads its runner; options.onProgress hears a build's steps. */
export type CreateRunner<R> = (stage: RunnerStageSpec, modelsDir: string, options?: CreateRunnerOptions) => Promise<R>;

/** The stage's model must be its kind's; its files are ensured, then `load` opens them. */
function runnerOf<R>(
  kind: StageKind,
  load: (files: ModelFiles, spec: ModelSpec, engine: RunnerEngine) => R,
): CreateRunner<R> {
  return async (stage, modelsDir, options = {}) => {
    checkKind(stage, kind);
    const files = await ensureModel(stage.model, modelsDir, options.onProgress);
    return load(files, stage.model, stage.engine ?? DEFAULT_ENGINE);
  };
}

export const createThinkerRunner: CreateRunner<ThinkerRunner> = runnerOf('thinker', (files, spec, engine) =>
  OnnxThinkerRunner.load(files, spec, engine),
);
export const createTalkerRunner: CreateRunner<TalkerRunner> = runnerOf('talker', (files, spec, engine) =>
  OnnxTalkerRunner.load(files, spec, engine),
);
export const createCode2WavRunner: CreateRunner<Code2WavRunner> = runnerOf('code2wav', (files, spec, engine) =>
  OnnxCode2WavRunner.load(files, spec, engine),
);
