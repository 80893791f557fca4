/**
 * A model folder in the cache, written whole or not at all: the files and a manifest.json go into a temp folder
 * beside it, then one rename puts it in place. A crash mid-write never leaves a half model that a later start would
 * load; a concurrent writer (another stage process) that loses the rename race uses the winner's folder. Generated
 * models (modelCache.ts) and imported GGUF files (stages/thinker/gguf/importGguf.ts) are both written this way.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

const MANIFEST = 'manifest.json';

/** The folder's manifest, or null when there is no whole folder there (never written, or unreadable). */
export async function readModelManifest<M>(dir: string): Promise<M | null> {
  try {
    return JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as M;
  } catch {
    return null;
  }
}

/**
 * Writes `files` (name -> bytes) and the manifest `manifestOf` makes from their sizes into `dir`. Returns the
 * manifest of the folder now in place and whether this call wrote it (false: another process did first).
 * `what` names the model in the error ("the thinker model").
 */
export async function publishModelFolder<M>(
  dir: string,
  files: Record<string, Uint8Array>,
  manifestOf: (sizes: Record<string, number>) => M,
  what: string,
): Promise<{ manifest: M; written: boolean }> {
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  try {
    await mkdir(tmp, { recursive: true });
    const sizes: Record<string, number> = {};
    for (const [name, bytes] of Object.entries(files)) {
      await writeFile(join(tmp, name), bytes);
      sizes[name] = bytes.byteLength;
    }
    const manifest = manifestOf(sizes);
    await writeFile(join(tmp, MANIFEST), JSON.stringify(manifest, null, 2));
    try {
      await rename(tmp, dir);
    } catch (err) {
      const winner = await readModelManifest<M>(dir);
      if (!winner) throw err;
      await rm(tmp, { recursive: true, force: true }); // another process wrote the same model first
      return { manifest: winner, written: false };
    }
    return { manifest, written: true };
  } catch (err) {
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
    throw new ChorusError(
      ErrorCodes.MODEL_BUILD,
      `cannot write ${what} to ${dir}: ${(err as Error).message}; check that models_dir is writable`,
      { cause: err },
    );
  }
}
