/**
 * Resolves each stage's `model:` to a ModelSpec. A file model is checked here (the file exists, a tokenizer folder
 * holds tokenizer.json); a generated model is checked against its kind's schema and sized by the kind's descriptor
 * (stages/<kind>/descriptor.ts), which derives or checks the sizes that must agree across stages, so a mismatch is a
 * config error with a line number rather than an ONNX shape error inside a stage process.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import type { ModelSpec } from '../common/modelSpec.ts';
import type { StageKind } from '../common/graph.ts';
import { stageKinds } from '../../stages/registry.ts';
import type { StageNeighbours } from '../../stages/StageKindDescriptor.ts';
import { resolveGgufModel } from './ggufModel.ts';
import type { Problems } from './problems.ts';
import { FileModelYaml } from './schema.ts';
import { check } from './validate.ts';

export interface ModelContext extends StageNeighbours {
  readonly index: number;
  readonly stageId: string;
  readonly kind: StageKind;
  readonly raw: Record<string, unknown> | undefined;
  readonly defaultPreset: string;
  readonly defaultSeed: number;
  readonly baseDir: string;
  /** The model cache (absolute): where a GGUF model's import lives. */
  readonly modelsDir: string;
}

/** Returns null (with problems recorded) when the model cannot be resolved. */
export function resolveModel(ctx: ModelContext, problems: Problems): ModelSpec | null {
  const at = ['stages', ctx.index, 'model'];
  const raw = ctx.raw ?? {};
  if ('path' in raw) return resolveFileModel(ctx, raw, problems);
  if ('gguf' in raw) {
    const isThinker = stageKinds[ctx.kind].entry;
    return resolveGgufModel({ at, baseDir: ctx.baseDir, modelsDir: ctx.modelsDir, isThinker }, raw, problems);
  }
  const descriptor = stageKinds[ctx.kind];
  if (!check(descriptor.modelSchema(ctx.modality), raw, at, problems)) return null;
  const preset = typeof raw.preset === 'string' ? raw.preset : undefined;
  return descriptor.resolveGeneratedModel(
    {
      at,
      stageId: ctx.stageId,
      raw,
      preset: preset ?? ctx.defaultPreset,
      presetFromGraph: preset === undefined,
      seed: typeof raw.seed === 'number' ? raw.seed : ctx.defaultSeed,
      inputs: ctx.inputs,
      consumers: ctx.consumers,
      ...(ctx.modality ? { modality: ctx.modality } : {}),
    },
    problems,
  );
}

function resolveFileModel(ctx: ModelContext, raw: Record<string, unknown>, problems: Problems): ModelSpec | null {
  const at = ['stages', ctx.index, 'model'];
  if (!check(FileModelYaml, raw, at, problems)) return null;
  const model: Static<typeof FileModelYaml> = raw;
  const file = path.resolve(ctx.baseDir, model.path);
  let ok = true;
  if (!existsSync(file)) {
    problems.add(
      [...at, 'path'],
      `model file not found: ${file} (relative paths are resolved against the YAML file's folder)`,
    );
    ok = false;
  }
  if (model.tokenizer === undefined) return ok ? { source: 'file', path: file } : null;
  if (!stageKinds[ctx.kind].entry) {
    problems.add([...at, 'tokenizer'], `only a thinker has a tokenizer (this stage is a ${ctx.kind})`);
    return null;
  }
  const tokenizer = path.resolve(ctx.baseDir, model.tokenizer);
  if (!existsSync(path.join(tokenizer, 'tokenizer.json')) || !statSync(tokenizer).isDirectory()) {
    problems.add([...at, 'tokenizer'], `expected a folder holding tokenizer.json, got ${tokenizer}`);
    ok = false;
  }
  return ok ? { source: 'file', path: file, tokenizer } : null;
}
