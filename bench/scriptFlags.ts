/**
 * The flags of a standalone bench script (bench/video, bench/admission, bench/package, the cache probe), declared as
 * a table of defaults and read with node's parseArgs (strict: an unknown flag or a missing value is an error). A
 * default's type is its flag's: a number makes a number flag (a value that is not a number >= 0 is refused, naming
 * the flag), a boolean a switch, a string a string; null an optional number. A script that starts a pipeline takes
 * pipelineFlags: its --config defaults to the package's default pipeline, found from the package (not the working
 * directory, so a script runs from anywhere).
 */
import { parseArgs } from 'node:util';
import { defaultConfigPath, UsageError } from '../src/basics.ts';

type Default = string | number | boolean | null;

export type ScriptFlags<D extends Readonly<Record<string, Default>>> = {
  readonly [K in keyof D]: D[K] extends boolean
    ? boolean
    : D[K] extends number
      ? number
      : D[K] extends string
        ? string
        : number | null;
};

export function scriptFlags<const D extends Readonly<Record<string, Default>>>(
  defaults: D,
  args: string[] = process.argv.slice(2),
): ScriptFlags<D> {
  const entries = Object.entries(defaults);
  const options = Object.fromEntries(
    entries.map(([name, d]) => [name, { type: typeof d === 'boolean' ? ('boolean' as const) : ('string' as const) }]),
  );
  const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
  const valueOf = (name: string, d: Default) => {
    const given = values[name];
    if (given === undefined || typeof d === 'boolean' || typeof d === 'string') return given ?? d;
    const n = Number(given);
    if (given === '' || !Number.isFinite(n) || n < 0)
      throw new UsageError(`--${name} must be a number >= 0, got "${String(given)}"`);
    return n;
  };
  return Object.fromEntries(entries.map(([name, d]) => [name, valueOf(name, d)])) as ScriptFlags<D>;
}

/** scriptFlags with `--config FILE` (default: the package's default pipeline, configs/tiny-omni.yaml). */
export function pipelineFlags<const D extends Readonly<Record<string, Default>>>(
  defaults: D,
  args: string[] = process.argv.slice(2),
): ScriptFlags<D & { readonly config: string }> {
  return scriptFlags({ config: defaultConfigPath(), ...defaults }, args);
}
