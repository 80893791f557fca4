/**
 * What every command shares about its flags: a usage text, --help, and what a bad flag does (exit 2 with the
 * usage, before anything starts). Commands throw UsageError for a value that does not parse; node's parseArgs
 * errors (unknown flag, missing value) are treated the same.
 */
export class UsageError extends Error {}

/** True when the error means "this command line is wrong", not "the command failed". */
export function isUsageError(err: unknown): err is Error {
  if (err instanceof UsageError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** --help / -h anywhere before a `--`. */
export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** An integer flag value >= min, or undefined when the flag is absent. */
export function intFlag(flag: string, value: string | undefined, min = 0): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min)
    throw new UsageError(`${flag} must be an integer >= ${min}, got "${value}"`);
  return n;
}
