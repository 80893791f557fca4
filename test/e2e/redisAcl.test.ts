/**
 * Redis ACL users per role, as docs/scale-out-security.md gives them (read from that page, so the page is what is
 * tested): `chorus serve` as chorus-main and remote stages as chorus-stage join and answer over a redis-server of
 * this test's own; chorus-stage is refused publishing on main's command channels (`chorus:ctl:<instance>`) and
 * writing the deployment record, and may publish what a stage writes (its reports and heartbeats).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { chat, health, readyInstances, startServe, startStage } from '../helpers/deployment.ts';
import { ACL_PASSWORDS, documentedUsers } from '../helpers/redisAclUsers.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TWO_HOST = join(ROOT, 'configs', 'two-host.yaml');
const PASSWORDS = ACL_PASSWORDS;

describe('Redis ACL users per role', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
    const users = documentedUsers();
    expect(users.map((u) => u.name)).toEqual(['chorus-main', 'chorus-stage']);
    for (const { name, rules } of users) expect((await server.cli('ACL', 'SETUSER', name, ...rules)).trim()).toBe('OK');
  });
  afterAll(() => server?.stop());

  const urlOf = (user: string, password: string) => `redis://${user}:${password}@127.0.0.1:${server.port}`;

  it('a stage host user runs a stage but cannot command instances or rewrite the deployment', async () => {
    const mainEnv = { CHORUS_REDIS_URL: urlOf('chorus-main', PASSWORDS.MAIN_PASSWORD) };
    const stageUrl = urlOf('chorus-stage', PASSWORDS.STAGE_PASSWORD);
    const serve = await startServe(TWO_HOST, mainEnv);
    const talker = startStage(TWO_HOST, 'talker', 's1', { CHORUS_REDIS_URL: stageUrl });
    const code2wav = startStage(TWO_HOST, 'code2wav', 's1', { CHORUS_REDIS_URL: stageUrl });
    await readyInstances(serve, 3);
    const answer = await chat(serve.url, 'Tell me about the sea', { max_tokens: 12 });
    expect(answer.error).toBeNull();
    expect(answer.pcm16.length).toBeGreaterThan(0);

    const asStage = await RedisLink.connect({ url: stageUrl });
    try {
      const refused = (p: Promise<unknown>) => expect(p).rejects.toThrow(/NOPERM/);
      await refused(asStage.commands.publish('chorus:ctl:talker#s1', 'shutdown'));
      await refused(asStage.commands.publish('chorus:ctl:code2wav#s1', 'shutdown'));
      await refused(asStage.commands.set('chorus:deployment', 'forged'));
      await refused(asStage.commands.del('chorus:deployment'));
      // What a stage writes is allowed (garbage there is the control guard's: dropped, counted, logged).
      expect(await asStage.commands.publish('chorus:ctl:main', 'x')).toBeGreaterThan(0);
      expect(await asStage.commands.publish('chorus:hb', 'x')).toBeGreaterThan(0);
    } finally {
      await asStage.close();
    }
    expect((await health(serve.url)).httpStatus).toBe(200);

    for (const s of (await health(serve.url)).stages.filter((x) => x.placement === 'remote'))
      process.kill(s.pid!, 'SIGTERM');
    expect(await talker.exited).toBe(0);
    expect(await code2wav.exited).toBe(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(await server.keys()).toEqual([]);
  }, 240_000);
});
