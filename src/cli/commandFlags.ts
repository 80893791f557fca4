/**
 * The flags of a command that runs a pipeline: --config FILE (default configs/tiny-omni.yaml) and the command's own,
 * parsed strictly (an unknown flag or a positional argument is a usage error, exit 2, before anything starts).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { defaultConfigPath } from '../config/paths.ts';

type FlagsConfig = NonNullable<ParseArgsConfig['options']>;
type ConfigFlag = { config: { type: 'string'; default: string } };
interface CommandArgs<T extends FlagsConfig> {
  args: string[];
  strict: true;
  allowPositionals: false;
  options: ConfigFlag & T;
}
export type CommandFlags<T extends FlagsConfig> = ReturnType<typeof parseArgs<CommandArgs<T>>>['values'];

type HelpFlag = { help: { type: 'boolean'; short: 'h' } };
interface VerbArgs<T extends FlagsConfig> {
  args: string[];
  allowPositionals: true;
  options: T & HelpFlag;
}
export type VerbCommandArgs<T extends FlagsConfig> = ReturnType<typeof parseArgs<VerbArgs<T>>>;

/**
 * The flags and verbs of a command with verbs (`chorus config check FILE`, `chorus models build`): a flag that does
 * not parse prints the usage and gives exit code 2, --help prints it and gives 0; either way the command is done
 * and returns that code.
 */
export function verbCommandArgs<T extends FlagsConfig>(
  command: string,
  argv: string[],
  options: T,
  usage: string,
): VerbCommandArgs<T> | number {
  let parsed: VerbCommandArgs<T>;
  try {
    const help = { type: 'boolean', short: 'h' } as const;
    parsed = parseArgs<VerbArgs<T>>({ args: argv, allowPositionals: true, options: { ...options, help } });
  } catch (err) {
    process.stderr.write(`chorus ${command}: ${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(usage);
    return 0;
  }
  return parsed;
}

export function commandFlags<T extends FlagsConfig>(argv: string[], options: T): CommandFlags<T> {
  const config = { type: 'string', default: defaultConfigPath() } as const;
  return parseArgs<CommandArgs<T>>({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: { config, ...options },
  }).values;
}
