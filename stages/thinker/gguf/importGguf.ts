/**
 * Imports a GGUF into the model cache as a bring-your-own Thinker folder: decoder_model.onnx (ggufDecoder.ts),
 * tokenizer.json + tokenizer_config.json (ggufTokenizer.ts), config.json (eos_token_id, max_position_embeddings: what
 * the runner reads beside a file model) and manifest.json. The folder is named by the SHA-256 of the file's bytes and
 * the converter version, so the same weights are converted once whatever their path, and a changed file or converter
 * gets a new folder. Written to a temporary folder and renamed into place, so a crash leaves no half model behind and
 * two processes importing at once both end with the same complete folder.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { ChorusError, ErrorCodes, isChorusError } from '../../../src/common/errors.ts';
import { logger } from '../../../src/common/log.ts';
import type { BuildProgressStep } from '../../models/modelCache.ts';
import { publishModelFolder, readModelManifest } from '../../models/modelFolder.ts';
import { readArchitecture, type DecoderArchitecture } from './ggufArchitecture.ts';
import { buildGgufDecoder, type GgufWeightForm } from './ggufDecoder.ts';
import { GgufFile } from './GgufFile.ts';
import { convertTokenizer } from './ggufTokenizer.ts';
import { GgufWeights } from './ggufWeights.ts';

/** Bump when the converted output changes: old folders are then left alone and a new one is built. */
export const GGUF_CONVERTER_VERSION = 1;
export const GGUF_DECODER_FILE = 'decoder_model.onnx';

export interface GgufManifest {
  readonly source: string;
  readonly sha256: string;
  readonly converterVersion: number;
  readonly architecture: DecoderArchitecture;
  readonly name: string | null;
  readonly eosTokenId: number;
  readonly files: Readonly<Record<string, number>>;
  readonly importMs: number;
  /** float32, or q4 (Q4_0/Q4_1 projections kept 4-bit). */
  readonly weights: GgufWeightForm;
}

export interface ImportedGguf {
  /** The folder: decoder_model.onnx and the tokenizer files side by side. */
  readonly dir: string;
  readonly decoderPath: string;
  readonly manifest: GgufManifest;
  /** True when this call converted the file (false when the folder was already there). */
  readonly imported: boolean;
}

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The form a GGUF's weights are imported in unless asked otherwise: measured with bench/models/ggufDecode.ts at the
 * tag bench-archive-2026-12-02 (bench/README.md, "Archived harnesses").
 */
export const DEFAULT_GGUF_WEIGHTS: GgufWeightForm = 'q4';

export function ggufDirName(sha256: string, form: GgufWeightForm = DEFAULT_GGUF_WEIGHTS): string {
  return `gguf-${sha256.slice(0, 16)}-v${GGUF_CONVERTER_VERSION}${form === 'float32' ? '' : `-${form}`}`;
}

/** Converts the file into `files` (name -> bytes); the caller writes them. */
async function convert(
  path: string,
  form: GgufWeightForm,
  progress: (s: BuildProgressStep) => void,
): Promise<{ files: Record<string, Uint8Array>; architecture: DecoderArchitecture; name: string | null; eos: number }> {
  const file = GgufFile.open(path);
  try {
    const architecture = readArchitecture(file);
    const tokenizer = convertTokenizer(file); // before the weights: a refused tokenizer costs no conversion
    const decoder = await buildGgufDecoder(architecture, new GgufWeights(file), progress, form);
    const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 1));
    const name = file.metadata.get('general.name');
    const config = {
      model_type: architecture.architecture,
      vocab_size: architecture.vocabSize,
      hidden_size: architecture.hiddenSize,
      num_hidden_layers: architecture.numLayers,
      num_attention_heads: architecture.numHeads,
      num_key_value_heads: architecture.numKvHeads,
      max_position_embeddings: architecture.contextLength,
      bos_token_id: tokenizer.bosTokenId,
      eos_token_id: tokenizer.eosTokenId,
    };
    return {
      files: {
        [GGUF_DECODER_FILE]: decoder,
        'tokenizer.json': json(tokenizer.tokenizerJson),
        'tokenizer_config.json': json(tokenizer.tokenizerConfig),
        'config.json': json(config),
      },
      architecture,
      name: typeof name === 'string' ? name : null,
      eos: tokenizer.eosTokenId,
    };
  } finally {
    file.close();
  }
}

const inFlight = new Map<string, Promise<ImportedGguf>>();

/** The imported folder for a GGUF file: reused when its content was imported before, else converted now. */
export async function importGguf(
  path: string,
  modelsDir: string,
  progress: (s: BuildProgressStep) => void = () => {},
  form: GgufWeightForm = DEFAULT_GGUF_WEIGHTS,
): Promise<ImportedGguf> {
  let sha256: string;
  try {
    sha256 = await sha256OfFile(path);
  } catch (err) {
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `cannot read GGUF file ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const dir = join(modelsDir, ggufDirName(sha256, form));
  let pending = inFlight.get(dir);
  if (!pending) {
    pending = importInto(path, sha256, dir, form, progress).finally(() => inFlight.delete(dir));
    inFlight.set(dir, pending);
  }
  return pending;
}

async function importInto(
  path: string,
  sha256: string,
  dir: string,
  form: GgufWeightForm,
  progress: (s: BuildProgressStep) => void,
): Promise<ImportedGguf> {
  const existing = await readModelManifest<GgufManifest>(dir);
  const result = (manifest: GgufManifest, imported: boolean): ImportedGguf => ({
    dir,
    decoderPath: join(dir, GGUF_DECODER_FILE),
    manifest,
    imported,
  });
  if (existing) return result(existing, false);
  const log = logger.child({ gguf: path, dir });
  log.info('importing GGUF model (first use)');
  const started = performance.now();
  let converted: Awaited<ReturnType<typeof convert>>;
  try {
    converted = await convert(path, form, (step) => {
      log.debug(step, 'importing GGUF');
      progress(step);
    });
  } catch (err) {
    if (isChorusError(err)) throw err;
    throw new ChorusError(ErrorCodes.MODEL_BUILD, `cannot convert ${path}: ${(err as Error).message}`, { cause: err });
  }
  const { manifest, written } = await publishModelFolder<GgufManifest>(
    dir,
    converted.files,
    (sizes) => ({
      source: path,
      sha256,
      converterVersion: GGUF_CONVERTER_VERSION,
      architecture: converted.architecture,
      name: converted.name,
      eosTokenId: converted.eos,
      files: sizes,
      importMs: Math.round(performance.now() - started),
      weights: form,
    }),
    'the imported model',
  );
  if (written)
    log.info({ importMs: manifest.importMs, bytes: manifest.files[GGUF_DECODER_FILE] }, 'imported GGUF model');
  return result(manifest, written);
}
