/**
 * Chorus installed the way a user installs it: `npm pack`, then `npm install -g --prefix <scratch>` of the unpacked
 * package, and the `chorus` that npm linked into <scratch>/bin. Offline: npm cannot fetch the dependencies of a
 * tarball without the registry, so the unpacked package gets the clone's node_modules (a symlink) and its built
 * native addon (a copy: rebuilding it takes 10+ s on 2 cores), and npm installs the folder, as `npm link` does.
 * The package's JavaScript is the tier's dist/ (test/buildDist.ts builds it before any file runs): the installed
 * `chorus` runs dist/, no tsx. `npm pack` runs with --ignore-scripts: its prepack (`npm run build`, a checked `tsc -b`)
 * would type-check every source the tier's `--noCheck` build left unchecked, all of them on a fresh clone (the pack
 * 38 CPU-s against 6.7 without it: bench/NOTES.md, "Suite time: the build beside the unit tier, the pack's check"),
 * a check `npm test` made already (`tsc --noEmit`), to emit what dist/ holds.
 * Models come from the user cache directory (src/config/paths.ts), the same one the clone's runs use.
 * What this catches is what broke before (issue 32): anything resolved from the working directory or from the
 * clone's layout instead of the package's own folder, and anything the package needs but does not ship.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const REPO = join(import.meta.dirname, '..', '..');

export interface InstalledChorus {
  /** <prefix>/bin/chorus: npm's link to the package's bin/chorus.js (run it directly: its shebang is node). */
  readonly bin: string;
  /** A directory outside the clone and the package, to run it from. */
  readonly cwd: string;
  /** The unpacked package npm installed (what the tarball holds, plus node_modules and native/build). */
  readonly pkg: string;
}

/** Installs into a scratch folder that `remove()` deletes (call it in afterAll: the install serves a whole file). */
export function installChorus(): InstalledChorus & { remove(): void } {
  const scratch = mkdtempSync(join(tmpdir(), 'chorus-installed-'));
  try {
    return { ...installInto(scratch), remove: () => rmSync(scratch, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    throw err;
  }
}

function installInto(scratch: string): InstalledChorus {
  execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', scratch], {
    cwd: REPO,
    stdio: 'ignore',
  });
  const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${scratch}`);
  const pkg = join(scratch, 'package');
  execFileSync('tar', ['-xzf', join(scratch, tarball), '-C', scratch]);
  symlinkSync(join(REPO, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  cpSync(join(REPO, 'native', 'build'), join(pkg, 'native', 'build'), { recursive: true });
  const prefix = join(scratch, 'prefix');
  execFileSync(
    'npm',
    ['install', '--global', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--prefix', prefix, pkg],
    { cwd: scratch, stdio: 'ignore', env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' } },
  );
  const bin = join(prefix, 'bin', 'chorus');
  if (!existsSync(bin)) throw new Error(`npm install --global linked no ${bin}`);
  const cwd = join(scratch, 'elsewhere');
  mkdirSync(cwd);
  return { bin, cwd, pkg };
}
