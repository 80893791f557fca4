/**
 * The playground's files: index.html (served at /) and the page's ES modules, each .js file of src/server/playground/
 * served at /playground/<name> (infoRoutes.ts). security.ts lets a browser fetch all of them without the API key:
 * the page is where the visitor types it.
 */
import { readdirSync } from 'node:fs';
import { shippedAsset } from '../common/moduleFile.ts';

export const playgroundDir = shippedAsset('./playground/', import.meta.url);

/** The URL path of each of the page's scripts, by its file name. */
export function playgroundScripts(): Map<string, string> {
  const names = readdirSync(playgroundDir).filter((name) => name.endsWith('.js'));
  return new Map(names.sort().map((name) => [`/playground/${name}`, name]));
}
