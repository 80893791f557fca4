/**
 * `model: {gguf: PATH}` or `model: {gguf: {python_package: NAME, file: FILE}}` for a Thinker: the GGUF file is found
 * (a package's file by asking python3 where the package is installed), hashed, and resolved to a file model whose
 * decoder and tokenizer folder are its import in the model cache (stages/thinker/gguf/importGguf.ts). The folder
 * name comes from the file's content, so config load knows it without converting; loadConfig imports missing
 * folders before anything loads them.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import type { FileModelSpec } from '../common/modelSpec.ts';
import type { StageGraph } from '../common/graph.ts';
import { ChorusError, ErrorCodes, isChorusError } from '../common/errors.ts';
import { logger } from '../common/log.ts';
import { ggufDirName, GGUF_DECODER_FILE, importGguf } from '../../stages/thinker/gguf/importGguf.ts';
import { pythonPackageFile } from '../../stages/thinker/gguf/pythonPackageFile.ts';
import type { Problems } from './problems.ts';
import { GgufModelYaml } from './schema.ts';
import { check } from './validate.ts';

const HASH_CHUNK_BYTES = 8 * 1024 * 1024;
/** path -> [size, mtime, sha256]: each process hashes a file once however many times it parses configs. */
const hashes = new Map<string, [number, number, string]>();

function sha256Sync(file: string): string {
  const { size, mtimeMs } = statSync(file);
  const known = hashes.get(file);
  if (known && known[0] === size && known[1] === mtimeMs) return known[2];
  const hash = createHash('sha256');
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(HASH_CHUNK_BYTES);
    for (let read; (read = readSync(fd, chunk, 0, HASH_CHUNK_BYTES, null)) > 0;) hash.update(chunk.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  const digest = hash.digest('hex');
  hashes.set(file, [size, mtimeMs, digest]);
  return digest;
}

export interface GgufModelContext {
  readonly at: readonly (string | number)[];
  readonly baseDir: string;
  readonly modelsDir: string;
  readonly isThinker: boolean;
}

export function resolveGgufModel(
  ctx: GgufModelContext,
  raw: Record<string, unknown>,
  problems: Problems,
): FileModelSpec | null {
  if (!check(GgufModelYaml, raw, ctx.at, problems)) return null;
  if (!ctx.isThinker) {
    problems.add([...ctx.at, 'gguf'], 'a GGUF model is an LLM: only a thinker stage can take one');
    return null;
  }
  const gguf = (raw as Static<typeof GgufModelYaml>).gguf;
  let file: string;
  if (typeof gguf === 'string') {
    file = path.resolve(ctx.baseDir, gguf);
    if (!existsSync(file)) {
      problems.add(
        [...ctx.at, 'gguf'],
        `GGUF file not found: ${file} (relative paths resolve against the YAML folder)`,
      );
      return null;
    }
  } else {
    try {
      file = pythonPackageFile(gguf.python_package, gguf.file, `${ctx.at.join('.')}.gguf`);
    } catch (err) {
      if (!isChorusError(err)) throw err;
      problems.add([...ctx.at, 'gguf'], err.message);
      return null;
    }
  }
  const dir = path.join(ctx.modelsDir, ggufDirName(sha256Sync(file)));
  return { source: 'file', path: path.join(dir, GGUF_DECODER_FILE), tokenizer: dir, gguf: file };
}

/** Imports every GGUF model of the graph whose folder is not in the cache yet (first use), logging progress. */
export async function importGgufModels(graph: StageGraph): Promise<void> {
  for (const stage of graph.stages) {
    const model = stage.model;
    if (model.source !== 'file' || model.gguf === undefined || existsSync(model.path)) continue;
    const log = logger.child({ stage: stage.stageId, gguf: model.gguf });
    let lastQuarter = 0;
    await importGguf(model.gguf, graph.modelsDir, (step) => {
      const quarter = Math.floor((4 * step.done) / step.total);
      if (quarter > lastQuarter) log.info({ done: step.done, total: step.total }, `importing GGUF: ${step.what}`);
      lastQuarter = quarter;
    });
    if (!existsSync(model.path)) {
      throw new ChorusError(
        ErrorCodes.CONFIG_INVALID,
        `${model.gguf} changed while the config was loading (its content no longer matches ${model.path}): ` +
          'load it again',
      );
    }
  }
}
