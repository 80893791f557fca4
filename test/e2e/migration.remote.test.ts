/**
 * Request migration across hosts (issue 30 item 4), over a real redis-server: a remote Talker (`chorus stage`) killed
 * mid-answer is lost when its heartbeats stop, and its requests finish on the local Talker, identical to an
 * undisturbed answer, with engine.migration on the Talker; the frames pushed into the lost instance are dropped and
 * nothing is left in Redis.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chat, health, maxDiff, readyInstances, startServe, startStage } from '../helpers/deployment.ts';
import { redisForSuite } from '../helpers/redisServer.ts';
import { tempDir } from '../helpers/tempDir.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');
const PROMPT = 'Tell me about the sea';
const TALKER_ENGINE = 'engine: { max_num_seqs: 16, max_num_batched_tokens: 2048, threads: 1, kv_cache_bytes: 256MiB }';

describe('migration across hosts', () => {
  const suite = redisForSuite();

  it('a remote Talker lost mid-answer: its requests finish on the local one, identical', async () => {
    // configs/two-host.yaml with every stage local (1 replica each, edges on redis, so instances may join), the
    // Talker's requests migrating.
    const lines = readFileSync(TWO_HOST, 'utf8')
      .split('\n')
      .filter((line) => !/^\s+(placement|min_replicas):/.test(line));
    const talkerAt = lines.findIndex((l) => /stage_id: talker/.test(l));
    const engineAt = lines.findIndex((l, i) => i > talkerAt && l.includes(TALKER_ENGINE));
    expect(engineAt).toBeGreaterThan(talkerAt);
    lines[engineAt] = lines[engineAt].replace(
      TALKER_ENGINE,
      'engine: { max_num_seqs: 16, max_num_batched_tokens: 2048, threads: 1, kv_cache_bytes: 256MiB, ' +
        'migration: { max_attempts: 2 } }',
    );
    const config = join(tempDir('migration-remote'), 'mixed.yaml');
    writeFileSync(config, lines.join('\n'));
    // The remote Talker starts beside the serve: it joins once main is up, and their boots overlap (each took 94 s at
    // load 26, one after the other most of the test's time).
    const remote = startStage(config, 'talker', 'r1', suite.env());
    const serve = await startServe(config, suite.env());
    try {
      await readyInstances(serve, 4);
      const ask = { max_tokens: 40, ignore_eos: true, seed: 3 };
      const reference = await chat(serve.url, PROMPT, ask);
      expect(reference.error).toBeNull();

      // Two answers at once: the Talkers take one each (the least loaded).
      let started = 0;
      const answers = [0, 1].map(() => chat(serve.url, PROMPT, ask, () => started++));
      await expect.poll(() => started, { timeout: 60_000 }).toBe(2);
      const talkers = (await health(serve.url)).stages.filter((s) => s.stage_id === 'talker');
      const victim = talkers.find((s) => s.instance === 'talker#r1')!;
      expect(victim.in_flight).toBeGreaterThan(0);
      const killedAt = Date.now();
      process.kill(victim.pid!, 'SIGKILL');
      await remote.exited;

      for (const a of await Promise.all(answers)) {
        expect(a.error).toBeNull();
        expect(a.text).toBe(reference.text);
        expect(a.pcm16.length).toBe(reference.pcm16.length);
        expect(maxDiff(a.pcm16, reference.pcm16)).toBeLessThanOrEqual(1);
      }
      const endedAfterMs = Math.max(...(await Promise.all(answers)).map((a) => a.endedAtMs)) - killedAt;
      console.log(`the remote Talker's requests finished on the local one ${endedAfterMs} ms after its loss`);
      const metrics = await (await fetch(`${serve.url}/metrics`)).text();
      expect(metrics).toMatch(/chorus_migrations_total\{stage="talker",reason="lost",outcome="migrated"\} [1-9]/);
      // The frames pushed into the lost instance are dropped (nobody will pop them), not left for their 60 s TTL:
      // once the lost runs' Thinker let them go, no list into talker#r1 is left.
      const intoLost = async () => (await suite.server().keys()).filter((k) => k.endsWith(':in:talker#r1'));
      await expect.poll(intoLost, { timeout: 10_000 }).toEqual([]);
    } finally {
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    }
    // Nothing else is left once the killed instance's name lease lapses (LEASE_TTL_MS: 5 s, InstanceLease.ts): the
    // lease is its own to end (a restarted instance under its name takes it over), so main leaves it to its TTL.
    await expect.poll(() => suite.server().keys(), { timeout: 10_000 }).toEqual([]);
  }, 240_000);
});
