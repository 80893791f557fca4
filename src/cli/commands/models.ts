/**
 * `chorus models build|info [--config FILE]`: builds the generated models a stage graph uses, the audio and
 * vision encoders included (with progress; they are cached under models_dir and reused), or describes them
 * without building: sizes, folder, files, and for bring-your-own files what their signature offers.
 */
import { stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { defaultConfigPath, loadConfig } from '../../config/loadConfig.ts';
import type { GeneratedModelSpec, StageGraph, StageSpec } from '../../common/graph.ts';
import { isChorusError } from '../../common/errors.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import { ENCODER_GENERATOR_VERSION } from '../../../stages/encoder/ensureEncoderModel.ts';
import {
  ensureModel,
  modelDirName,
  type ModelBuildProgress,
  type ModelFiles,
} from '../../../stages/models/ensureModel.ts';

export const usage = `usage: chorus models <build|info> [--config FILE]

  build   build the generated models of every stage (first use only; then they are reused)
  info    describe each stage's model without building: sizes, folder, files, signature
  --config FILE   the stage graph (default: configs/tiny-omni.yaml)
`;

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`chorus models: ${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  const [verb, ...extra] = parsed.positionals;
  if (parsed.values.help) {
    process.stdout.write(usage);
    return 0;
  }
  if ((verb !== 'build' && verb !== 'info') || extra.length > 0) {
    process.stderr.write(
      verb === undefined
        ? usage
        : `chorus models: unexpected "${verb === 'build' || verb === 'info' ? extra[0] : verb}"\n\n${usage}`,
    );
    return 2;
  }
  try {
    const graph = await loadConfig(parsed.values.config ?? defaultConfigPath());
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
