/**
 * Migration to a replacement that joins after the loss (issue 41 item 2), over a real redis-server: the only
 * Code2Wav, a remote one (`chorus stage`), SIGKILLed mid-answer; once main has declared it lost, a new instance joins
 * under a new name, or under the old name (it takes the lapsed name lease), and every waiting answer completes on
 * it, identical to an undisturbed answer (greedy). With no replacement, the requests end at the stage's
 * `engine.migration.max_wait_ms` with CHORUS_ERR_STAGE_LOST saying what they waited for and how to fix it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chat,
  health,
  maxDiff,
  readyInstances,
  startServe,
  startStage,
  type ChatAnswer,
  type Serve,
  type Started,
} from '../helpers/deployment.ts';
import { redisForSuite } from '../helpers/redisServer.ts';
import { tempDir } from '../helpers/tempDir.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');
const PROMPT = 'Tell me about the sea';
const ASK = { max_tokens: 40, ignore_eos: true, seed: 3 };
const ANSWERS = 4;
/** The Talker's requests wait this long for a replacement (none comes): the failure case stays short. */
const TALKER_WAIT_MS = 1500;
/**
 * Code2Wav's requests wait this long: a replacement is a new `chorus stage` process (tsx, the model), which took 3-22 s
 * to be READY on the shared 2-core machine depending on its load. The test waits only as long as the replacement takes.
 */
const REPLACEMENT_WAIT_MS = 90_000;

/**
 * configs/two-host.yaml (the Thinker local; the Talker and Code2Wav remote, one instance each), Code2Wav's requests
 * waiting up to REPLACEMENT_WAIT_MS for a replacement, the Talker's TALKER_WAIT_MS.
 */
function config(): string {
  const text = readFileSync(TWO_HOST, 'utf8');
  const withWait = (stage: string, engine: string, waitMs: number) => {
    const at = text.indexOf(`stage_id: ${stage}`);
    const engineAt = text.indexOf(engine, at);
    expect([at, engineAt].every((i) => i > 0)).toBe(true);
    return [engineAt + engine.length - 2, `, migration: { max_wait_ms: ${waitMs} }`] as const;
  };
  const edits = [
    withWait(
      'talker',
      'engine: { max_num_seqs: 16, max_num_batched_tokens: 2048, threads: 1, kv_cache_bytes: 256MiB }',
      TALKER_WAIT_MS,
    ),
    withWait('code2wav', 'engine: { max_num_seqs: 16, threads: 1 }', REPLACEMENT_WAIT_MS),
  ].sort((a, b) => b[0] - a[0]);
  let out = text;
  for (const [at, insert] of edits) out = out.slice(0, at) + insert + out.slice(at);
  const file = join(tempDir('migration-replacement'), 'two-host.yaml');
  writeFileSync(file, out);
  return file;
}

/** Answers running at once, resolved with the time all of them had started streaming. */
async function inFlight(serve: Serve): Promise<Promise<ChatAnswer>[]> {
  let started = 0;
  const answers = Array.from({ length: ANSWERS }, () => chat(serve.url, PROMPT, ASK, () => started++));
  await expect.poll(() => started, { timeout: 60_000, interval: 20 }).toBe(ANSWERS);
  return answers;
}

/** Kills `instance` (SIGKILL, as a crash or a lost host) with requests in flight; returns when. */
async function kill(serve: Serve, stage: Started, instance: string): Promise<number> {
  const victim = (await health(serve.url)).stages.find((s) => s.instance === instance)!;
  expect(victim.in_flight).toBeGreaterThan(0);
  const killedAt = Date.now();
  process.kill(victim.pid!, 'SIGKILL');
  await stage.exited;
  return killedAt;
}

/** Resolves once main has lost `instance` (its heartbeats stopped: it leaves /health), with the time since the kill. */
async function lost(serve: Serve, instance: string, killedAt: number): Promise<number> {
  const listed = async () => (await health(serve.url)).stages.some((s) => s.instance === instance);
  await expect.poll(listed, { timeout: 10_000, interval: 20 }).toBe(false);
  return Date.now() - killedAt;
}

function expectIdentical(answers: readonly ChatAnswer[], reference: ChatAnswer): void {
  for (const a of answers) {
    expect(a.error).toBeNull();
    expect(a.text).toBe(reference.text);
    expect(a.pcm16.length).toBe(reference.pcm16.length);
    expect(maxDiff(a.pcm16, reference.pcm16)).toBeLessThanOrEqual(1);
  }
}

describe('migration to a replacement that joins after the loss', () => {
  const suite = redisForSuite();

  it('a remote Code2Wav killed: its requests finish on a replacement (new name, same name), or fail', async () => {
    const file = config();
    const env = suite.env();
    const serve = await startServe(file, env);
    const talker = startStage(file, 'talker', 't1', env);
    let code2wav = startStage(file, 'code2wav', 'a', env);
    try {
      await readyInstances(serve, 3);
      const reference = await chat(serve.url, PROMPT, ASK);
      expect(reference.error).toBeNull();
      expect(reference.pcm16.length).toBeGreaterThan(0);

      // 1. A new name: code2wav#b starts once main has lost code2wav#a. 2. The same name: code2wav#b restarts at
      // once, and joins after the loss by construction (it waits for the killed process's name lease, which
      // outlives main's heartbeat TTL: InstanceLease.ts).
      for (const [was, next] of [
        ['a', 'b'],
        ['b', 'b'],
      ] as const) {
        const answers = await inFlight(serve);
        const killedAt = await kill(serve, code2wav, `code2wav#${was}`);
        if (next === was) code2wav = startStage(file, 'code2wav', next, env);
        const lostAfterMs = await lost(serve, `code2wav#${was}`, killedAt);
        if (next !== was) code2wav = startStage(file, 'code2wav', next, env);
        await readyInstances(serve, 3, REPLACEMENT_WAIT_MS);
        const readyAfterMs = Date.now() - killedAt;
        const done = await Promise.all(answers);
        expectIdentical(done, reference);
        const endedAfterMs = Math.max(...done.map((a) => a.endedAtMs)) - killedAt;
        console.log(
          `code2wav#${was} killed, code2wav#${next} replaced it (ms after the kill): lost ${lostAfterMs}, the ` +
            `replacement READY ${readyAfterMs}, ${ANSWERS} answers complete and identical ${endedAfterMs} ` +
            `(${endedAfterMs - readyAfterMs} after READY)`,
        );
      }
      const metrics = await (await fetch(`${serve.url}/metrics`)).text();
      expect(metrics).toMatch(
        new RegExp(`chorus_migrations_total\\{stage="code2wav",reason="lost",outcome="migrated"\\} ${2 * ANSWERS}\\b`),
      );

      // 3. No replacement: the Talker's requests end at its max_wait_ms, saying what they waited for and the fix.
      const answers = await inFlight(serve);
      const killedAt = await kill(serve, talker, 'talker#t1');
      for (const a of await Promise.all(answers)) {
        expect(a.error?.code).toBe('CHORUS_ERR_STAGE_LOST');
        expect(a.error?.message).toContain(
          'not migrated: waited 1.5 s (stages.talker.engine.migration.max_wait_ms) and no instance of stage talker ' +
            'became ready: start an instance of stage talker (chorus stage --config <file> --stage talker',
        );
        expect(a.endedAtMs - killedAt).toBeGreaterThanOrEqual(TALKER_WAIT_MS);
      }
      const failedAfterMs = Math.max(...(await Promise.all(answers)).map((a) => a.endedAtMs)) - killedAt;
      console.log(`no replacement: the Talker's answers failed ${failedAfterMs} ms after its kill`);
    } finally {
      serve.child.kill('SIGTERM');
      code2wav.child.kill('SIGTERM');
      talker.child.kill('SIGKILL');
      expect(await serve.exited).toBe(0);
      await code2wav.exited;
    }
    // The killed instances' name leases lapse (5 s), the drained one's is ended: nothing is left in Redis.
    await expect.poll(() => suite.server().keys(), { timeout: 10_000 }).toEqual([]);
  }, 180_000);
});
