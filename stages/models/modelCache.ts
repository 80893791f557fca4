/**
 * Generated models live in `<modelsDir>/<kind>-<hash>/`, the hash covering kind, sizes, seed and the
 * generator version, so a change to any of them builds a new folder and an old one is never reused by
 * mistake. A build writes into a temp folder and renames it into place, so a crash mid-build never
 * leaves a half model that a later start would load; a concurrent builder (another stage process) that
 * loses the rename race just uses the winner's folder.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GeneratedModelSpec, ModelSpec } from '../../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { logger } from '../../src/common/log.ts';
import { noteModelBuild } from '../../src/common/modelBuildTime.ts';
import { publishModelFolder, readModelManifest } from './modelFolder.ts';

/** Bump when a generator's graph or weights change: old folders then stop matching. */
export const GENERATOR_VERSION = 3; // 3: thinker and talker with the append-only KV signature
/** Kinds whose generator moved on alone (only their folders change). */
const KIND_GENERATOR_VERSION: Partial<Record<string, number>> = {
  thinker: 4, // 4: logits of the last position only
  talker: 5, // 4: the code predictor also outputs its greedy codes (ArgMax in the graph); 5: as thinker 4, and
  //            last_hidden_state too
};

/** The generator version of a kind: its own, or GENERATOR_VERSION. */
export function generatorVersionOf(kind: string): number {
  return KIND_GENERATOR_VERSION[kind] ?? GENERATOR_VERSION;
}

/** A generator's progress: step `done` of `total`. */
export interface BuildProgressStep {
  readonly done: number;
  readonly total: number;
  readonly what: string;
}

/** What a generator returns. */
export interface BuiltFiles {
  /** file name -> bytes */
  readonly files: Record<string, Uint8Array>;
}

/** Every generated kind, the encoders included (built through ensureEncoderModel, with their own generator version). */
export type ModelKind = GeneratedModelSpec['kind'];

/**
 * A kind's model generator: the model's sizes and its weights' seed in, its files out, progress after each part built
 * (the decoders also take the KV-cache I/O, `Option`).
 */
export type ModelGenerator<Size, Option = never> = (
  size: Size,
  seed: number,
  progress: (s: BuildProgressStep) => void,
  ...option: [Option] extends [never] ? [] : [option?: Option]
) => Promise<BuiltFiles>;

export interface ModelBuildProgress extends BuildProgressStep {
  readonly kind: ModelKind;
}

/** Each generated kind's sizes. */
export type SizeOfKind = { [M in GeneratedModelSpec as M['kind']]: M['size'] };

/**
 * A generated model's sizes: from its spec, or from the manifest of a generated folder used as a file model; null for
 * a file model with no manifest of this kind beside it.
 */
export function generatedSizeOf<K extends ModelKind>(
  kind: K,
  spec: ModelSpec,
  files: ModelFiles,
): SizeOfKind[K] | null {
  if (spec.source === 'generated' && spec.kind === kind) return spec.size as SizeOfKind[K];
  const manifestPath = join(files.dir, 'manifest.json');
  if (!existsSync(manifestPath)) return null;
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as ModelManifest;
    return manifest.kind === kind ? (manifest.size as SizeOfKind[K]) : null;
  } catch {
    return null;
  }
}

export interface ModelManifest {
  readonly kind: ModelKind;
  readonly generatorVersion: number;
  readonly preset: string;
  readonly seed: number;
  readonly size: GeneratedModelSpec['size'];
  readonly files: Readonly<Record<string, number>>; // name -> bytes
  readonly buildMs: number;
}

export interface ModelFiles {
  readonly source: 'generated' | 'file';
  /** The folder holding the model (for a file model: the file's folder, where siblings are looked up). */
  readonly dir: string;
  /** For a generated model: file name -> absolute path. For a file model: { model: path }. */
  readonly files: Readonly<Record<string, string>>;
  readonly manifest: ModelManifest | null;
  /** True when this call built the model (false when it was reused or is a file). */
  readonly built: boolean;
}

/**
 * Any generated model: what names its folder (kind, sizes, seed, generator version) and how to build it.
 * ensureModel makes one from a stage's spec; the encoders make their own (their kinds are not stage kinds).
 */
export interface GeneratedModelRecipe {
  readonly kind: ModelKind;
  readonly preset: string;
  readonly seed: number;
  readonly size: GeneratedModelSpec['size'];
  /** Defaults to generatorVersionOf(kind); a generator with its own version bumps only its own folders. */
  readonly generatorVersion?: number;
  build(progress: (s: BuildProgressStep) => void): Promise<BuiltFiles>;
}

export function modelDirName(spec: Pick<GeneratedModelRecipe, 'kind' | 'seed' | 'size' | 'generatorVersion'>): string {
  const sortedSize = Object.fromEntries(Object.entries(spec.size).sort(([a], [b]) => a.localeCompare(b)));
  const key = JSON.stringify({
    kind: spec.kind,
    size: sortedSize,
    seed: spec.seed,
    generator: spec.generatorVersion ?? generatorVersionOf(spec.kind),
  });
  return `${spec.kind}-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

const inFlight = new Map<string, Promise<ModelFiles>>();

/** Builds (once, atomically) or reuses the folder of any generated model. */
export async function ensureGeneratedModel(
  recipe: GeneratedModelRecipe,
  modelsDir: string,
  onProgress?: (p: ModelBuildProgress) => void,
): Promise<ModelFiles> {
  const dir = join(modelsDir, modelDirName(recipe));
  let pending = inFlight.get(dir);
  if (!pending) {
    pending = ensureGenerated(recipe, dir, onProgress).finally(() => inFlight.delete(dir));
    inFlight.set(dir, pending);
  }
  return pending;
}

function filesOf(dir: string, manifest: ModelManifest): Record<string, string> {
  return Object.fromEntries(Object.keys(manifest.files).map((name) => [name, join(dir, name)]));
}

async function ensureGenerated(
  spec: GeneratedModelRecipe,
  dir: string,
  onProgress?: (p: ModelBuildProgress) => void,
): Promise<ModelFiles> {
  const existing = await readModelManifest<ModelManifest>(dir);
  if (existing) return { source: 'generated', dir, files: filesOf(dir, existing), manifest: existing, built: false };

  const log = logger.child({ model: spec.kind, preset: spec.preset, dir });
  log.info('building generated model (first use)');
  const started = performance.now();
  let built: BuiltFiles;
  try {
    built = await spec.build((step) => onProgress?.({ kind: spec.kind, ...step }));
  } catch (err) {
    throw new ChorusError(
      ErrorCodes.MODEL_BUILD,
      `cannot build the ${spec.kind} model (preset ${spec.preset}): ${(err as Error).message}; check the model ` +
        `sizes in the config`,
      { cause: err },
    );
  }
  const { manifest, written } = await publishModelFolder<ModelManifest>(
    dir,
    built.files,
    (sizes) => ({
      kind: spec.kind,
      generatorVersion: spec.generatorVersion ?? generatorVersionOf(spec.kind),
      preset: spec.preset,
      seed: spec.seed,
      size: spec.size,
      files: sizes,
      buildMs: Math.round(performance.now() - started),
    }),
    `the ${spec.kind} model`,
  );
  if (written) {
    noteModelBuild(manifest.buildMs);
    const bytes = Object.values(manifest.files).reduce((a, b) => a + b, 0);
    log.info({ buildMs: manifest.buildMs, bytes }, 'built generated model');
  }
  return { source: 'generated', dir, files: filesOf(dir, manifest), manifest, built: written };
}
