/**
 * Where things live on disk. The repo root is found by walking up to package.json, so the answer holds
 * whether this file runs from src/ through tsx or from a compiled copy elsewhere in the tree.
 */
import { existsSync } from 'node:fs';
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
