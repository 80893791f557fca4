/** The problem lines of a config that must fail to load (a ChorusError CONFIG_INVALID; the summary line dropped). */
import { expect } from 'vitest';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';

export function configProblems(yaml: string, file = 'configs/x.yaml', cores = 64): string[] {
  try {
    parseConfig(yaml, file, { cores });
  } catch (err) {
    expect(err).toBeInstanceOf(ChorusError);
    expect((err as ChorusError).code).toBe(ErrorCodes.CONFIG_INVALID);
    return (err as ChorusError).message.split('\n').slice(1);
  }
  throw new Error('expected the config to be rejected');
}
