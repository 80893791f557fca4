/**
 * What `chorus models` does once its command line is checked (./models.ts): builds or describes the models of a
 * stage graph, imports a GGUF file. Its own module: the model builders, the GGUF importer and the stage registry load
 * only for a command that uses them, never for --help or a bad flag.
 */
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { defaultConfigPath, loadConfig } from '../../config/loadConfig.ts';
import type { GeneratedModelSpec } from '../../common/modelSpec.ts';
import type { StageGraph, StageSpec } from '../../common/graph.ts';
import { isChorusError } from '../../common/errors.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import { ENCODER_GENERATOR_VERSION } from '../../../stages/encoder/ensureEncoderModel.ts';
import { defaults } from '../../config/defaults.ts';
import { userCacheDir } from '../../config/paths.ts';
import { GGUF_WEIGHT_FORMS, type GgufWeightForm } from '../../../stages/thinker/gguf/ggufDecoder.ts';
import { DEFAULT_GGUF_WEIGHTS, importGguf } from '../../../stages/thinker/gguf/importGguf.ts';
import {
  ensureModel,
  modelDirName,
  type ModelBuildProgress,
  type ModelFiles,
} from '../../../stages/models/ensureModel.ts';

/** `models build` and `models info`: each stage's model, built or described. */
export async function buildOrInfo(verb: 'build' | 'info', config: string | undefined): Promise<number> {
  try {
    const graph = await loadConfig(config ?? defaultConfigPath());
    process.stdout.write(`${graph.file}\nmodels_dir: ${graph.modelsDir}\n`);
    for (const stage of uniqueModels(graph)) {
      process.stdout.write(verb === 'build' ? await build(graph, stage) : await info(graph, stage));
    }
    return 0;
  } catch (err) {
    if (!isChorusError(err)) throw err;
    process.stderr.write(`chorus models: ${err.code}: ${err.message}\n`);
    return 1;
  }
}

/** `models import FILE`: the GGUF file converted into a Thinker folder in the model cache. */
export async function runImport(
  gguf: string,
  modelsDir: string | undefined,
  weights: string | undefined,
): Promise<number> {
  const form = (weights ?? DEFAULT_GGUF_WEIGHTS) as GgufWeightForm;
  if (!GGUF_WEIGHT_FORMS.includes(form)) {
    process.stderr.write(`chorus models import: --weights ${weights} is not one of ${GGUF_WEIGHT_FORMS.join(', ')}\n`);
    return 2;
  }
  const file = resolve(gguf);
  const dir = resolve(modelsDir ?? join(userCacheDir(), defaults.modelsDir));
  try {
    const started = performance.now();
    const printer = progressPrinter('import');
    const imported = await importGguf(file, dir, (step) => printer({ kind: 'thinker', ...step }), form);
    const ms = Math.round(performance.now() - started);
    const a = imported.manifest.architecture;
    process.stdout.write(
      `${file}\n  ${imported.manifest.name ?? 'unnamed'}: ${a.architecture}, ${a.numLayers} layers, hidden ` +
        `${a.hiddenSize}, ${a.numHeads} heads (${a.numKvHeads} KV), vocab ${a.vocabSize}, ` +
        `context ${a.contextLength}\n` +
        `  ${imported.imported ? `imported in ${ms} ms` : 'already imported, reused'}\n` +
        (await filesLines({
          source: 'file',
          dir: imported.dir,
          files: filesOfImport(imported.dir, imported.manifest.files),
          manifest: null,
          built: false,
        })) +
        `  use it as a Thinker:  model: {gguf: ${file}}\n`,
    );
    return 0;
  } catch (err) {
    if (!isChorusError(err)) throw err;
    process.stderr.write(`chorus models import: ${err.code}: ${err.message}\n`);
    return 1;
  }
}

function filesOfImport(dir: string, files: Readonly<Record<string, number>>): Record<string, string> {
  return Object.fromEntries(Object.keys(files).map((name) => [name, join(dir, name)]));
}

/** Stages that share a model (same generated folder or file) are listed once. */
function uniqueModels(graph: StageGraph): StageSpec[] {
  const seen = new Set<string>();
  return graph.stages.filter((s) => {
    const key = s.model.source === 'file' ? s.model.path : generatedDirName(s.model);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function isEncoderModel(
  m: GeneratedModelSpec,
): m is Extract<GeneratedModelSpec, { kind: 'audio_encoder' | 'vision_encoder' }> {
  return m.kind === 'audio_encoder' || m.kind === 'vision_encoder';
}

/** The folder name ensureModel uses: the encoders carry their own generator version. */
function generatedDirName(m: GeneratedModelSpec): string {
  return modelDirName(isEncoderModel(m) ? { ...m, generatorVersion: ENCODER_GENERATOR_VERSION } : m);
}

function mib(bytes: number): string {
  return bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}

function sizeLine(stage: StageSpec): string {
  const m = stage.model;
  if (m.source === 'file' && m.gguf !== undefined) return `gguf ${m.gguf}, imported as ${m.path}`;
  if (m.source === 'file') return `file ${m.path}`;
  const fields = Object.entries(m.size).map(([k, v]) => `${k}=${v}`);
  return `generated ${m.kind}, preset ${m.preset}, seed ${m.seed}: ${fields.join(' ')}`;
}

async function filesLines(files: ModelFiles): Promise<string> {
  let total = 0;
  const lines: string[] = [];
  for (const [name, path] of Object.entries(files.files)) {
    const bytes = (await stat(path)).size;
    total += bytes;
    lines.push(`    ${name.padEnd(22)} ${mib(bytes)}`);
  }
  return `  folder: ${files.dir}\n${lines.join('\n')}\n  total: ${mib(total)}\n`;
}

function progressPrinter(stageId: string): (p: ModelBuildProgress) => void {
  // A live line on a terminal; nothing on a pipe (the summary below says what was built).
  if (!process.stderr.isTTY) return () => {};
  return (p) => {
    process.stderr.write(`\r  building ${stageId} (${p.kind}): ${p.done}/${p.total} ${p.what}\x1b[K`);
    if (p.done === p.total) process.stderr.write('\n');
  };
}

async function build(graph: StageGraph, stage: StageSpec): Promise<string> {
  const started = performance.now();
  const files = await ensureModel(stage.model, graph.modelsDir, progressPrinter(stage.stageId));
  const ms = Math.round(performance.now() - started);
  const what =
    files.source === 'file'
      ? 'file model (nothing to build)'
      : files.built
        ? `built in ${ms} ms`
        : 'already built, reused';
  const header = `\n${stage.stageId}: ${sizeLine(stage)}\n  ${what}\n`;
  return header + (await filesLines(files)) + (await describeRunner(graph, stage));
}

async function info(graph: StageGraph, stage: StageSpec): Promise<string> {
  const m = stage.model;
  let out = `\n${stage.stageId}: ${sizeLine(stage)}\n`;
  if (m.source === 'generated') {
    if (isEncoderModel(m)) out += `  rows of ${m.size.outputSize} (the thinker's hidden size)\n`;
    const dir = `${graph.modelsDir}/${generatedDirName(m)}`;
    const built = await stat(`${dir}/manifest.json`).then(
      () => true,
      () => false,
    );
    if (!built) return `${out}  not built yet: ${dir} (chorus models build)\n`;
    out += await filesLines(await ensureModel(m, graph.modelsDir));
    return out;
  }
  return out + (await filesLines(await ensureModel(m, graph.modelsDir))) + (await describeRunner(graph, stage));
}

/** Loads the model (as a stage would) and reports what it turned out to be: its READY facts. */
async function describeRunner(graph: StageGraph, stage: StageSpec): Promise<string> {
  const facts = await descriptorOf(stage.kind).probe(stage, graph);
  const fields = Object.entries(facts)
    .filter(([key]) => key !== 'kind')
    .map(([key, value]) => `${key} ${Array.isArray(value) ? value.join('+') : String(value)}`);
  return `  loads: ${fields.join(', ')}\n`;
}
