/**
 * Resolves each stage's `model:` to a ModelSpec. Generated models are preset sizes plus snake_case
 * overrides; sizes that must agree across stages are derived or checked here, once, so a mismatch is a
 * config error with a line number rather than an ONNX shape error inside a stage process.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import { presets } from '../../stages/models/presets.ts';
import { MIN_BYTE_VOCAB_SIZE } from '../../stages/tokenizer/ByteTokenizer.ts';
import { suggest, type Problems } from './problems.ts';
import { FileModelYaml, GeneratedModelYaml } from './schema.ts';
import type { Code2WavSize, ModelSpec, StageKind, TalkerSize, ThinkerSize } from './types.ts';
import { check } from './validate.ts';


export interface ModelContext {
  readonly index: number;
  readonly stageId: string;
  readonly kind: StageKind;
  readonly raw: Record<string, unknown> | undefined;
  readonly defaultPreset: string;
  readonly defaultSeed: number;
  readonly baseDir: string;
  /** Already-resolved models of this stage's inputs (topological order guarantees they exist). */
  readonly upstream: readonly { readonly stageId: string; readonly index: number; readonly kind: StageKind; readonly model: ModelSpec | null }[];
}

/** Returns null (with problems recorded) when the model cannot be resolved. */
export function resolveModel(ctx: ModelContext, problems: Problems): ModelSpec | null {
  const at = ['stages', ctx.index, 'model'];
  const raw = ctx.raw ?? {};
  if ('path' in raw) return resolveFileModel(ctx, raw, problems);
  if (ctx.kind === 'encoder') {
    // Generated encoders are sized from the Thinker they feed: see encoders.ts (loadConfig routes them there).
    problems.add(at, 'a generated encoder is resolved with its consumer thinker; this is a bug in the config loader');
    return null;
  }
  const schema = GeneratedModelYaml[ctx.kind];
  if (!check(schema, raw, at, problems)) return null;
  const preset = raw.preset ?? ctx.defaultPreset;
  const family = presets[preset];
  if (!family) {
    const where = raw.preset !== undefined ? [...at, 'preset'] : ['model_preset'];
    problems.add(where, `unknown model preset "${preset}"${suggest(preset, Object.keys(presets))} (presets: ${Object.keys(presets).join(', ')})`);
    return null;
  }
  const seed = raw.seed ?? ctx.defaultSeed;
  const overrides = camelSizes(raw);
  const before = problems.count;
  switch (ctx.kind) {
    case 'thinker': {
      const size: ThinkerSize = { ...family.thinker, ...overrides };
      checkTransformer(size, at, problems);
      if (size.acceptLayer >= size.numLayers) problems.add([...at, 'accept_layer'], `must be < num_layers (${size.numLayers}), got ${size.acceptLayer}`);
      if (size.vocabSize < MIN_BYTE_VOCAB_SIZE) {
        problems.add([...at, 'vocab_size'], `must be >= ${MIN_BYTE_VOCAB_SIZE} for the built-in byte tokenizer (256 bytes + 16 specials + words), got ${size.vocabSize}`);
      }
      return problems.count > before ? null : { source: 'generated', kind: 'thinker', preset, seed, size };
    }
    case 'talker': {
      const conditionDim = talkerConditionDim(ctx, raw, problems);
      const { conditionDim: _ignored, ...presetOverrides } = overrides as Partial<TalkerSize>;
      const size: TalkerSize = { ...family.talker, ...presetOverrides, conditionDim: conditionDim ?? 0 };
      checkTransformer(size, at, problems);
      return problems.count > before || conditionDim === null ? null : { source: 'generated', kind: 'talker', preset, seed, size };
    }
    case 'code2wav': {
      const size: Code2WavSize = { ...family.code2wav, ...overrides };
      checkCodebooksMatchTalker(ctx, size, raw, problems);
      return problems.count > before ? null : { source: 'generated', kind: 'code2wav', preset, seed, size };
    }
  }
}

function resolveFileModel(ctx: ModelContext, raw: Record<string, unknown>, problems: Problems): ModelSpec | null {
  const at = ['stages', ctx.index, 'model'];
  if (!check(FileModelYaml, raw, at, problems)) return null;
  const model: Static<typeof FileModelYaml> = raw as Static<typeof FileModelYaml>;
  const file = path.resolve(ctx.baseDir, model.path);
  let ok = true;
  if (!existsSync(file)) {
    problems.add([...at, 'path'], `model file not found: ${file} (relative paths are resolved against the YAML file's folder)`);
    ok = false;
  }
  if (model.tokenizer === undefined) return ok ? { source: 'file', path: file } : null;
  if (ctx.kind !== 'thinker') {
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

/** conditionDim = 2 x the upstream thinker's hidden size ([thinker embed | accept hidden] per row). */
function talkerConditionDim(ctx: ModelContext, raw: Record<string, unknown>, problems: Problems): number | null {
  const at = ['stages', ctx.index, 'model'];
  const given = raw.condition_dim as number | undefined;
  const thinker = ctx.upstream.find((u) => u.kind === 'thinker');
  if (!thinker) {
    problems.add(['stages', ctx.index, 'inputs'], 'a talker needs a thinker stage among its inputs (its condition rows come from the thinker)');
    return null;
  }
  if (thinker.model === null) return null; // the thinker's own problem is already reported
  if (thinker.model.source === 'file') {
    if (given === undefined) {
      problems.add(at, `cannot derive condition_dim: the upstream thinker "${thinker.stageId}" is a file model; set condition_dim (2 x its hidden size)`);
      return null;
    }
    return given;
  }
  if (thinker.model.kind !== 'thinker') return null;
  const derived = 2 * thinker.model.size.hiddenSize;
  if (given !== undefined && given !== derived) {
    problems.add([...at, 'condition_dim'], `must be 2 x hidden_size of thinker "${thinker.stageId}" = ${derived}, got ${given} (leave it out: it is derived)`);
    return null;
  }
  return derived;
}

function checkCodebooksMatchTalker(ctx: ModelContext, size: Code2WavSize, raw: Record<string, unknown>, problems: Problems): void {
  const at = ['stages', ctx.index, 'model'];
  // A file-model talker's sizes are unknown here; the stage checks them against the ONNX at load.
  const talker = ctx.upstream.find((u) => u.kind === 'talker');
  if (talker?.model?.source !== 'generated' || talker.model.kind !== 'talker') return;
  const theirs = talker.model.size;
  for (const [key, mine, other] of [
    ['codebook_size', size.codebookSize, theirs.codebookSize],
    ['num_codebooks', size.numCodebooks, theirs.numCodebooks],
  ] as const) {
    if (mine === other) continue;
    const where = key in raw ? [...at, key] : at;
    problems.add(
      where,
      `${key} ${mine} does not match talker "${talker.stageId}" (stages[${talker.index}].model.${key} = ${other}); the vocoder must decode every code the talker emits — set both to the same value`,
    );
  }
}

function checkTransformer(size: { hiddenSize: number; numHeads: number }, at: (string | number)[], problems: Problems): void {
  if (size.hiddenSize % size.numHeads !== 0) {
    problems.add([...at, 'hidden_size'], `must be divisible by num_heads (${size.numHeads}), got ${size.hiddenSize}`);
  }
}

/** { hidden_size: 64, preset: 'x' } -> { hiddenSize: 64 } (preset and seed are not sizes). */
function camelSizes(raw: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'preset' || key === 'seed') continue;
    out[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value as number;
  }
  return out;
}
