/**
 * Scale-out over a real redis-server: `chorus serve` with remote stages that join with `chorus stage`, each in its
 * own IPC and mount namespace with a private /dev/shm (no shared-memory shortcut can pass), all on 127.0.0.1.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, configWith } from '../helpers/engine.ts';
import { chat, health, maxDiff, readyInstances, startServe, startStage, type Serve } from '../helpers/deployment.ts';
import { RedisCluster, redisForSuite } from '../helpers/redisServer.ts';
import { tempDir } from '../helpers/tempDir.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');

/**
 * two-host.yaml with engine.migration off on every stage, for the cases about the failure path (a lost instance's
 * requests failing, not migrating: test/e2e/migration.remote.test.ts has those), with the lines `keep` keeps.
 */
function withoutMigration(keep: (line: string) => boolean = () => true): string {
  const text = readFileSync(TWO_HOST, 'utf8')
    .split('\n')
    .filter(keep)
    .map((line) => (/^\s+engine: \{.*\}$/.test(line) ? line.replace(/ \}$/, ', migration: false }') : line))
    .join('\n');
  expect(text.match(/migration: false/g)).toHaveLength(3);
  return text;
}
const PROMPT = 'Tell me about the sea';

/** The files process `pid` holds open on the kernel's CPU latency QoS (src/common/cpuWakeupLatency.ts). */
function qosFiles(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === '/dev/cpu_dma_latency') n++;
    } catch {
      // closed while listed
    }
  }
  return n;
}

const references = new Map<number, Promise<{ text: string; pcm16: Int16Array }>>();

/** The all-shm answer (configs/tiny-omni-text-in.yaml, same models and seeds), as pcm16. */
function reference(maxTokens: number): Promise<{ text: string; pcm16: Int16Array }> {
  let ref = references.get(maxTokens);
  if (!ref) references.set(maxTokens, (ref = computeReference(maxTokens)));
  return ref;
}

async function computeReference(maxTokens: number): Promise<{ text: string; pcm16: Int16Array }> {
  const engine = await Orchestrator.start(configWith('tiny-omni-text-in.yaml'));
  try {
    const got = await collect(
      engine.generate({
        messages: [{ role: 'user', content: PROMPT }],
        modalities: ['text', 'audio'],
        sampling: { maxTokens },
      }),
    );
    const pcm16 = Int16Array.from(got.pcm, (x) => Math.round(Math.max(-1, Math.min(1, x)) * 32767));
    return { text: got.text, pcm16 };
  } finally {
    await engine.close();
  }
}

describe('scale-out over Redis', () => {
  const suite = redisForSuite();

  /**
   * A stage with the wrong password, then one of another config started before main and one after, each refused
   * with what to do; returns the serve of two-host.yaml that refused them, with no instance of its own joined.
   */
  async function refusals(): Promise<Serve> {
    const wrong = startStage(TWO_HOST, 'talker', 'w1', {
      CHORUS_REDIS_URL: suite.server().url.replace(`:${suite.server().password}@`, ':not-the-password@'),
    });
    expect(await wrong.exited).toBe(1);
    expect(wrong.output()).toMatch(/CHORUS_ERR_TRANSPORT_UNAVAILABLE.*password/);

    const other = join(tempDir('scaleout'), 'other.yaml');
    writeFileSync(other, readFileSync(TWO_HOST, 'utf8').replace('model_seed: 0', 'model_seed: 1'));
    // Started before main: it waits; main then refuses it (its heartbeat carries another config hash).
    const early = startStage(other, 'talker', 'o1', suite.env());
    await expect.poll(() => early.output(), { timeout: 30_000 }).toContain('joining the deployment');
    const serve = await startServe(TWO_HOST, suite.env());
    expect(await early.exited).toBe(2);
    expect(early.output()).toMatch(/refused: this deployment runs config [0-9a-f]{12}.*same config file/);
    // Started after main: it reads the deployment's config hash and refuses before loading anything.
    const late = startStage(other, 'talker', 'o2', suite.env());
    expect(await late.exited).toBe(1);
    expect(late.output()).toMatch(/CHORUS_ERR_CONFIG_MISMATCH.*same config file/);
    return serve;
  }

  it('wrong joiners refused; remote Talker + Code2Wav, private namespaces, answer as all-shm; all leave', async () => {
    // The refusals share this case's deployment (a serve boot less for the file): what they leave, nothing, is
    // checked with the rest at the end.
    const serve = await refusals();
    // /health waits for the remote stages (min_replicas 1 each) before it is ready.
    const before = await health(serve.url);
    expect(before.httpStatus).toBe(503);
    expect(before.stages.filter((s) => s.status === 'waiting').map((s) => s.stage_id)).toEqual(['talker', 'code2wav']);

    const talker = startStage(TWO_HOST, 'talker', 'b1', suite.env(), { isolated: true });
    const code2wav = startStage(TWO_HOST, 'code2wav', 'b1', suite.env(), { isolated: true });
    await readyInstances(serve, 3);
    const h = await health(serve.url);
    expect(h.httpStatus).toBe(200);
    const remote = h.stages.filter((s) => s.placement === 'remote');
    expect(remote.map((s) => s.instance).sort()).toEqual(['code2wav#b1', 'talker#b1']);
    for (const s of remote) expect(Date.now() - Date.parse(s.last_heartbeat!)).toBeLessThan(2000);
    // Their /dev/shm is a private tmpfs: this machine's segments are not in it.
    const talkerPid = remote.find((s) => s.stage_id === 'talker')!.pid!;
    const theirs = readdirSync(`/proc/${talkerPid}/root/dev/shm`);
    expect(theirs.filter((n) => readdirSync('/dev/shm').includes(n))).toEqual([]);

    // cpu_wakeup_latency_us: 0 (two-host.yaml): a stage host holds its own machine's idle cores polling while it
    // has requests (src/worker/stageMain.ts); root may open the kernel's file (CI), another user is refused.
    const holds: number[] = [];
    const got = await chat(serve.url, PROMPT, { max_tokens: 12 }, undefined, () => holds.push(qosFiles(talkerPid)));
    expect(got.error).toBeNull();
    expect(holds).toEqual([process.getuid?.() === 0 ? 1 : 0]);
    const ref = await reference(12);
    expect(got.text).toBe(ref.text);
    expect(got.pcm16.length).toBe(ref.pcm16.length);
    expect(maxDiff(got.pcm16, ref.pcm16)).toBeLessThanOrEqual(1);

    // SIGTERM (to the stage: unshare ignores it): the stages drain and leave (exit 0), main sees them go; then main
    // stops; no key is left in Redis.
    for (const s of remote) process.kill(s.pid!, 'SIGTERM');
    expect(await talker.exited).toBe(0);
    expect(await code2wav.exited).toBe(0);
    await expect
      .poll(async () => (await health(serve.url)).stages.filter((s) => s.status === 'waiting').length)
      .toBe(2);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(await suite.server().keys()).toEqual([]);
  }, 240_000);

  it('2 remote Talkers + 1 local share the load; a killed one fails only its requests (STAGE_LOST)', async () => {
    // Talker local (1 replica) with its edges on redis, so instances may join it too.
    const dir = tempDir('scaleout');
    const config = join(dir, 'mixed.yaml');
    const text = withoutMigration((line) => !/^\s+(placement|min_replicas):/.test(line));
    expect(text).not.toMatch(/^\s+placement:/m);
    writeFileSync(config, text);
    // The remote Talkers boot beside the serve's own stages (they join once main is up).
    const b1 = startStage(config, 'talker', 'b1', suite.env());
    startStage(config, 'talker', 'b2', suite.env());
    const serve = await startServe(config, suite.env());
    await readyInstances(serve, 5);

    let started = 0;
    const answers = Array.from({ length: 8 }, (_, i) =>
      chat(serve.url, `${PROMPT} ${i}`, { max_tokens: 60, ignore_eos: true }, () => started++),
    );
    await expect.poll(() => started, { timeout: 60_000 }).toBe(8);
    const during = (await health(serve.url)).stages.filter((s) => s.stage_id === 'talker');
    expect(during).toHaveLength(3);
    for (const t of during) expect(t.in_flight).toBeGreaterThan(0);
    const victim = during.find((s) => s.instance === 'talker#b1')!;
    const killedAt = Date.now();
    process.kill(victim.pid!, 'SIGKILL');
    await b1.exited;
    // Once main has lost b1 (its requests failed by then), a new instance boots while the other answers finish.
    await expect
      .poll(async () => (await health(serve.url)).stages.map((s) => s.instance), { timeout: 30_000, interval: 50 })
      .not.toContain('talker#b1');
    startStage(config, 'talker', 'b3', suite.env());

    const done = await Promise.all(answers);
    const lost = done.filter((a) => a.error !== null);
    expect(lost.length).toBe(victim.in_flight);
    for (const a of lost) {
      expect(a.error!.code).toBe('CHORUS_ERR_STAGE_LOST');
      expect(a.error!.message).toMatch(/talker#b1.*host/);
      expect(a.endedAtMs - killedAt).toBeLessThan(3000);
    }
    for (const a of done.filter((x) => x.error === null)) expect(a.pcm16.length).toBeGreaterThan(0);

    // The new instance joins and takes new work.
    await readyInstances(serve, 5);
    let again = 0;
    const more = Array.from({ length: 3 }, (_, i) =>
      chat(serve.url, `${PROMPT} again ${i}`, { max_tokens: 40, ignore_eos: true }, () => again++),
    );
    await expect.poll(() => again, { timeout: 60_000 }).toBe(3);
    const b3 = (await health(serve.url)).stages.find((s) => s.instance === 'talker#b3')!;
    expect(b3.in_flight).toBeGreaterThan(0);
    for (const a of await Promise.all(more)) expect(a.error).toBeNull();
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 240_000);

  it('Redis killed mid-stream: clear errors, server up; Redis back: the stages rejoin and answer', async () => {
    // Migration off: the request is to fail at the outage, not wait up to chunk_timeout_ms for an instance.
    const config = join(tempDir('scaleout'), 'no-migration.yaml');
    writeFileSync(config, withoutMigration());
    const stages = [startStage(config, 'talker', 'k1', suite.env()), startStage(config, 'code2wav', 'k1', suite.env())];
    const serve = await startServe(config, suite.env());
    await readyInstances(serve, 3);
    let streaming = false;
    const inFlight = chat(serve.url, PROMPT, { max_tokens: 200, ignore_eos: true }, () => (streaming = true));
    await expect.poll(() => streaming, { timeout: 30_000 }).toBe(true);
    await suite.server().kill();
    const failed = await inFlight;
    expect(['CHORUS_ERR_TRANSPORT_UNAVAILABLE', 'CHORUS_ERR_STAGE_LOST']).toContain(failed.error?.code);
    expect(failed.error!.message).toMatch(/Redis|heartbeat/);
    // The server is up and says what is missing; a new request gets a clear refusal, not a hang. The request can fail
    // on the data connector's own connection before main's control link has seen the outage (two sockets, no order
    // between their closes): /health turns 503 when the control link's loss of every remote instance is handled.
    await expect.poll(async () => (await health(serve.url)).httpStatus, { timeout: 10_000, interval: 20 }).toBe(503);
    const refused = await chat(serve.url, PROMPT, { max_tokens: 4 });
    expect(refused.error).not.toBeNull();

    await suite.server().restart();
    await readyInstances(serve, 3);
    const again = await chat(serve.url, PROMPT, { max_tokens: 12 });
    expect(again.error).toBeNull();
    const ref = await reference(12);
    expect(again.text).toBe(ref.text);
    expect(maxDiff(again.pcm16, ref.pcm16)).toBeLessThanOrEqual(1);
    // Stopped, not killed: each gives its name lease back as it leaves (a killed one leaves its lease to expire, which
    // the next test's check for leftovers could still see).
    for (const stage of stages) stage.child.kill('SIGTERM');
    for (const stage of stages) expect(await stage.exited).toBe(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    // Nothing of this test is left but orphans the outage may leave: frames a remote stage pushed, after Redis came
    // back, for a request the outage had failed (main's abort was lost with the outage). Redis drops them after the
    // connector's ttl_seconds (60 in two-host.yaml), and nothing else may be left.
    for (const key of await suite.server().keys()) {
      expect(key).toMatch(/^chorus:\{chatcmpl-[\w-]+\}:in:/);
      const ttl = Number((await suite.server().cli('ttl', key)).trim());
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60);
    }
  }, 180_000);
});

describe('scale-out over a 3-node Redis Cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers like all-shm, with the keys of requests spread over the shards', async () => {
    const env = { CHORUS_REDIS_URL: cluster.url };
    const serve = await startServe(TWO_HOST, env);
    const stages = [
      startStage(TWO_HOST, 'talker', 'c1', env, { isolated: true }),
      startStage(TWO_HOST, 'code2wav', 'c1', env, { isolated: true }),
    ];
    await readyInstances(serve, 3);
    const remote = (await health(serve.url)).stages.filter((s) => s.placement === 'remote');
    const ref = await reference(12);
    // 8 requests: each one's lists share a slot, so all of them on one of the 3 nodes has odds 3 / 3^8 (1 in 2187;
    // with 4 requests it was 1 in 27, and CI met it once).
    const answers = await Promise.all(Array.from({ length: 8 }, () => chat(serve.url, PROMPT, { max_tokens: 12 })));
    for (const a of answers) {
      expect(a.error).toBeNull();
      expect(a.text).toBe(ref.text);
      expect(maxDiff(a.pcm16, ref.pcm16)).toBeLessThanOrEqual(1);
    }
    // Every request's lists hash to its own slot: the pushes landed on more than one node.
    const pushes = await Promise.all(
      cluster.nodes.map(async (n) =>
        Number(/cmdstat_rpush:calls=(\d+)/.exec(await n.cli('info', 'commandstats'))?.[1] ?? 0),
      ),
    );
    expect(pushes.filter((p) => p > 0).length).toBeGreaterThan(1);
    // The stages leave first (a live stage holds its name's lease, main or no main), then main: no key is left.
    for (const s of remote) process.kill(s.pid!, 'SIGTERM');
    for (const stage of stages) expect(await stage.exited).toBe(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    for (const n of cluster.nodes) expect(await n.keys()).toEqual([]);
  }, 180_000);
});
