/**
 * The Redis ACL users of docs/scale-out-security.md, read from that page (so the page is what is tested), created on
 * a test's redis-server: chorus-main and chorus-stage, the least-privileged user a stage host has.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisServer } from './redisServer.ts';

const ROOT = join(import.meta.dirname, '..', '..');
export const ACL_PASSWORDS = { MAIN_PASSWORD: 'main-secret-33', STAGE_PASSWORD: 'stage-secret-33' };

/** The `user ...` lines of the page's ACL file, as ACL SETUSER arguments (a `(selector)` is one argument). */
export function documentedUsers(): { name: string; rules: string[] }[] {
  const page = readFileSync(join(ROOT, 'docs', 'scale-out-security.md'), 'utf8');
  return page
    .split('\n')
    .filter((line) => line.startsWith('user chorus-'))
    .map((line) => {
      const withPasswords = line.replace(
        /MAIN_PASSWORD|STAGE_PASSWORD/g,
        (p) => ACL_PASSWORDS[p as keyof typeof ACL_PASSWORDS],
      );
      const [, name, ...rules] = withPasswords.match(/\([^)]*\)|\S+/g)!;
      return { name, rules };
    });
}

/** Creates the documented users on `server`; the url of each, by user name. */
export async function createDocumentedUsers(server: RedisServer): Promise<Record<string, string>> {
  const urls: Record<string, string> = {};
  for (const { name, rules } of documentedUsers()) {
    const reply = (await server.cli('ACL', 'SETUSER', name, ...rules)).trim();
    if (reply !== 'OK') throw new Error(`ACL SETUSER ${name}: ${reply}`);
    const password = name === 'chorus-main' ? ACL_PASSWORDS.MAIN_PASSWORD : ACL_PASSWORDS.STAGE_PASSWORD;
    urls[name] = `redis://${name}:${password}@127.0.0.1:${server.port}`;
  }
  return urls;
}
