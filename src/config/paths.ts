/**
 * Where things live on disk. The repo root is found by walking up to package.json, so the answer holds
 * whether this file runs from src/ through tsx or from a compiled copy elsewhere in the tree.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The folder holding Chorus's package.json. */
export function repoRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  cachedRoot = dir;
  return dir;
}

/** configs/tiny-omni.yaml: the default pipeline (audio + image encoders -> thinker -> talker -> code2wav). */
export function defaultConfigPath(): string {
  return path.join(repoRoot(), 'configs', 'tiny-omni.yaml');
}

/**
 * Chorus's cache on this machine, where generated and imported models are built once: $CHORUS_CACHE_DIR, else
 * $XDG_CACHE_HOME/chorus, else ~/.cache/chorus. Never inside the package: an installed package may be read-only, is
 * replaced whole by an upgrade, and is shared by users who should not write into each other's models.
 */
export function userCacheDir(): string {
  const own = process.env.CHORUS_CACHE_DIR;
  if (own) return path.resolve(own);
  const xdg = process.env.XDG_CACHE_HOME;
  // The XDG spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
  return path.join(base, 'chorus');
}
