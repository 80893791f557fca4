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

export function commandFlags<T extends FlagsConfig>(argv: string[], options: T): CommandFlags<T> {
  const config = { type: 'string', default: defaultConfigPath() } as const;
  return parseArgs<CommandArgs<T>>({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: { config, ...options },
  }).values;
}
