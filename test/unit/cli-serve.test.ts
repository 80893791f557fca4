/**
 * `chorus serve`'s own flags, in process (cli.test.ts runs every command's --help and bad lines as processes):
 * --client-stall-timeout is listed with its default, and a value that is not whole seconds is a usage error raised
 * before the config is read or any stage starts.
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/common/cliArgs.ts';
import { run, usage } from '../../src/cli/commands/serve.ts';

describe('chorus serve --client-stall-timeout', () => {
  it('is in the usage, with its default and what happens past it', () => {
    expect(usage).toMatch(/\[--client-stall-timeout S\]/);
    expect(usage).toMatch(/--client-stall-timeout S\s+seconds a response may stay paused .*\(20;/);
    expect(usage).toMatch(/CHORUS_ERR_CLIENT_TOO_SLOW; 0: never/);
  });

  it('refuses a value that is not whole seconds >= 0, before reading the config', async () => {
    const refused = run(['--config', '/nonexistent.yaml', '--client-stall-timeout', '1.5']);
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow(/--client-stall-timeout must be an integer >= 0, got "1.5"/);
  });
});
