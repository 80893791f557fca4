/**
 * Which file of a module a process starts: the TypeScript source when Chorus runs from source (tsx: development and
 * tests), the compiled JavaScript when it runs from the package's build (dist/, what `chorus` runs once installed).
 * tsc rewrites import specifiers (`./x.ts` -> `./x.js`) but not the URLs built by hand for a child process or a worker
 * thread: those go through here, so a compiled process never starts TypeScript (and never needs tsx).
 */

import { existsSync } from 'node:fs';

/** This file's own extension tells how the whole tree runs: tsc compiles every file or none. */
export const RUNS_COMPILED = import.meta.url.endsWith('.js');

/** `relative` (a path without extension, from `base`: import.meta.url) as the file this process runs. */
export function moduleFile(relative: string, base: string): URL {
  return new URL(`${relative}${RUNS_COMPILED ? '.js' : '.ts'}`, base);
}

/**
 * The file a child process starts for `relative` (a path without extension from the package root, e.g.
 * `stages/stageEntry`; `rootBase` the package root's URL): as moduleFile() does, except that a process running from
 * source with CHORUS_COMPILED=1 starts the built file in dist/ when there is one. bin/chorus.js already runs dist/
 * under that variable; this carries it to the children of an engine started in a source process (the test tiers
 * build dist/ first, test/buildDist.ts, and set it: tsx's loader was half of each stage process's boot CPU).
 */
export function childModuleFile(relative: string, rootBase: URL): URL {
  const built = builtInstead(new URL(relative, rootBase), rootBase);
  if (built) return built;
  return RUNS_COMPILED ? new URL(`dist/${relative}.js`, rootBase) : new URL(`${relative}.ts`, rootBase);
}

/** The package root of the sources (this file is src/common/moduleFile.ts there). */
const SOURCE_ROOT = new URL('../../', import.meta.url);

/**
 * When a source process runs with CHORUS_COMPILED=1: the built dist/ file of `source` (a source URL without extension
 * under `root`), if there is one; otherwise null (run the source).
 */
function builtInstead(source: URL, root: URL): URL | null {
  if (RUNS_COMPILED || process.env.CHORUS_COMPILED !== '1' || !source.href.startsWith(root.href)) return null;
  const built = new URL(`dist/${source.href.slice(root.href.length)}.js`, root);
  return existsSync(built) ? built : null;
}

/**
 * A worker thread's entry: from source, the boot file (plain JavaScript that registers tsx in the thread: loader hooks
 * of the starting thread do not reach workers, and Node 20 cannot start one from a .ts file); compiled, the module
 * itself. A source process under CHORUS_COMPILED=1 starts the built module from dist/ when there is one, as
 * childModuleFile() does for processes: registering tsx in a thread cost more CPU than the thread's own modules (a
 * redis connector's I/O thread, which loads node-redis, booted on ~1.7 s of CPU through tsx against ~1.0 s compiled,
 * at load ~20), and tests open dozens of them.
 */
export function workerEntry(bootFile: string, relative: string, base: string): URL {
  if (RUNS_COMPILED) return new URL(`${relative}.js`, base);
  return builtInstead(new URL(relative, base), SOURCE_ROOT) ?? new URL(bootFile, base);
}

/** Node flags a child process needs to run `entry`: tsx's loader for TypeScript (resolved from this package). */
export function loaderFlagsFor(entry: string): string[] {
  // A bare `--import tsx` is resolved from the process's working directory: run from anywhere but the clone (a global
  // install, `npm link`, a script in another folder), every stage died with ERR_MODULE_NOT_FOUND before READY.
  return entry.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
}

/**
 * A file that ships as it is, beside the sources (the playground's page and scripts, a plain-JavaScript worker): from
 * source, `relative` to `base`; compiled, the same place in the package's source tree, not in dist/ (tsc copies no
 * assets, and a second copy could drift).
 */
export function shippedAsset(relative: string, base: string): URL {
  if (!RUNS_COMPILED) return new URL(relative, base);
  const at = base.lastIndexOf('/dist/');
  return new URL(relative, base.slice(0, at) + base.slice(at + '/dist'.length));
}
