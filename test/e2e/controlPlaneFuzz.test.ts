/**
 * The control plane under garbage, over a real redis-server: `chorus serve` (configs/two-host.yaml) with a remote
 * Talker and Code2Wav joined by `chorus stage`, while 1,000 random payloads (test/helpers/controlFuzz.ts) go to each
 * control channel and the heartbeat channel and requests are answered. Before issue 33 one `PUBLISH chorus:hb
 * garbage` made main drop every remote instance for good, and garbage on a stage's channel left it a black hole.
 * Then 10,000 messages of every control message type with one value made invalid (fast-check, from the schemas),
 * reports and heartbeats published by the least-privileged stage ACL user: before issue 41 one stats report with
 * `batchSizes: [NaN]` crashed main; each must be counted, and main, the stages and the answers stay as they were.
 * Before that, a second `chorus stage` under a live name is refused, and a restarted instance takes its name back.
 * Both cases run on one deployment (its boot is most of a case's time); the last one stops it and finds nothing left.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { controlKeys } from '../helpers/redisControl.ts';
import { MAX_CONTROL_MESSAGE_BYTES } from '../../src/worker/ControlChannel.ts';
import { MAIN_TO_STAGE_SCHEMAS, STAGE_TO_MAIN_SCHEMAS } from '../../src/worker/messages.ts';
import type { ControlKind } from '../../src/control/wire.ts';
import { ControlFuzz, valueFuzzedMessages, type FuzzedMessage } from '../helpers/controlFuzz.ts';
import { createDocumentedUsers } from '../helpers/redisAclUsers.ts';
import {
  chat,
  health,
  readyInstances,
  startServe,
  startStage,
  type Serve,
  type Started,
} from '../helpers/deployment.ts';
import { sharedProcesses } from '../helpers/processes.ts';
import { redisForSuite } from '../helpers/redisServer.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');
const PROMPT = 'Tell me about the sea';
const PAYLOADS_PER_CHANNEL = 1_000;
const SEED = 33;
/** Value-fuzzed messages (issue 41): every control message type, spread evenly. */
const VALUE_FUZZED = 10_000;

/** chorus_control_messages_dropped_total from main's /metrics, by `channel/reason`. */
async function droppedOnMain(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const dropped = new Map<string, number>();
  for (const m of text.matchAll(/^chorus_control_messages_dropped_total\{channel="(\w+)",reason="(\w+)"\} (\d+)/gm))
    dropped.set(`${m[1]}/${m[2]}`, Number(m[3]));
  return dropped;
}

const sumDropped = (dropped: Map<string, number>, channel: string, reasons: readonly string[]) =>
  reasons.reduce((sum, reason) => sum + (dropped.get(`${channel}/${reason}`) ?? 0), 0);

/**
 * Publishes `messages` in batches (node-redis pipelines a batch's commands): reports and heartbeats as `asStage`, the
 * least-privileged stage ACL user, commands to instances as `asMain` (a stage user may not publish there).
 */
async function publishAll(messages: readonly FuzzedMessage[], asStage: RedisLink, asMain: RedisLink, keys: Keys) {
  const BATCH = 500;
  for (let i = 0; i < messages.length; i += BATCH)
    await Promise.all(
      messages.slice(i, i + BATCH).map((m, j) => {
        if (m.kind === 'to_main') return asStage.commands.publish(keys.toMain, m.bytes);
        if (m.kind === 'heartbeat') return asStage.commands.publish(keys.heartbeat, m.bytes);
        return asMain.commands.publish(keys.toInstance(keys.instances[(i + j) % keys.instances.length]), m.bytes);
      }),
    );
}

type Keys = ReturnType<typeof controlKeys> & { readonly instances: readonly string[] };

const droppedLines = (output: string) => output.split('\n').filter((l) => l.includes('"msg":"control message dropped'));

/** The ready remote instances /health lists, as `instance -> pid`. */
async function remoteInstances(serve: Serve): Promise<Record<string, number>> {
  const remote = (await health(serve.url)).stages.filter((s) => s.placement === 'remote' && s.status === 'ready');
  return Object.fromEntries(remote.map((s) => [s.instance!, s.pid!]));
}

/** remoteInstances once every stage is ready and holds no request (nothing stuck). */
async function remoteIdle(serve: Serve): Promise<Record<string, number>> {
  await expect
    .poll(async () => (await health(serve.url)).stages.every((s) => s.status === 'ready' && s.in_flight === 0), {
      timeout: 30_000,
    })
    .toBe(true);
  return remoteInstances(serve);
}

describe('control plane under garbage', () => {
  const suite = redisForSuite();
  const shared = sharedProcesses();
  let serve: Serve;
  let talker: Started;
  let code2wav: Started;

  beforeAll(async () => {
    // The stages start beside the serve: main boots them as soon as it is up on Redis, their models load beside its.
    talker = startStage(TWO_HOST, 'talker', 'f1', suite.env(), { shared });
    code2wav = startStage(TWO_HOST, 'code2wav', 'f1', suite.env(), { shared });
    serve = await startServe(TWO_HOST, suite.env(), { shared });
    await readyInstances(serve, 3);
  }, 300_000);

  it('a second stage under a live name is refused; a restarted one takes its name back', async () => {
    const before = await remoteIdle(serve);

    const duplicate = startStage(TWO_HOST, 'talker', 'f1', suite.env());
    expect(await duplicate.exited).toBe(1);
    const holder = `\\(host .+, pid ${before['talker#f1']}\\)`;
    expect(duplicate.output()).toMatch(
      new RegExp(`CHORUS_ERR_INSTANCE_NAME_TAKEN: the instance name talker#f1 is held by a live stage ${holder}`),
    );
    expect(duplicate.output()).toMatch(/another --name, or stop that one first/);
    // Main never saw it: the same instances, and they answer.
    expect(await remoteIdle(serve)).toEqual(before);
    expect((await chat(serve.url, PROMPT, { max_tokens: 12 })).error).toBeNull();

    // The holder dies without releasing its name; a new process under it waits for the lease to lapse and joins.
    process.kill(before['talker#f1'], 'SIGKILL');
    await talker.exited;
    talker = startStage(TWO_HOST, 'talker', 'f1', suite.env(), { shared });
    await expect
      .poll(async () => (await remoteInstances(serve))['talker#f1'], { timeout: 60_000 })
      .toBe(talker.child.pid);
    expect((await chat(serve.url, PROMPT, { max_tokens: 12 })).error).toBeNull();
    // It leaves cleanly (exit 0, its lease released) with main and the other stage at the end of the next case.
  }, 300_000);

  it('garbage and value-fuzzed messages on every control channel: no instance lost, every answer alike', async () => {
    // What main and the stages log from here on (the case before killed an instance: main said so then).
    const [mainFrom, talkerFrom, code2wavFrom] = [serve, talker, code2wav].map((p) => p.output().length);
    const before = await remoteIdle(serve);
    expect(Object.keys(before).sort()).toEqual(['code2wav#f1', 'talker#f1']);

    const keys = controlKeys('chorus');
    const channels: [string, ControlKind][] = [
      [keys.heartbeat, 'heartbeat'],
      [keys.toMain, 'to_main'],
      [keys.toInstance('talker#f1'), 'to_instance'],
      [keys.toInstance('code2wav#f1'), 'to_instance'],
    ];
    const fuzz = new ControlFuzz(SEED, Object.keys(before));
    const link = await RedisLink.connect({ url: suite.server().url });
    let streaming = 0;
    const answers = Array.from({ length: 4 }, (_, i) =>
      chat(serve.url, PROMPT, { max_tokens: 24 }, () => streaming++).then((a) => ({ ...a, i })),
    );
    try {
      await expect.poll(() => streaming, { timeout: 60_000 }).toBeGreaterThan(0); // garbage meets live requests
      for (let n = 0; n < PAYLOADS_PER_CHANNEL; n++) {
        await Promise.all(channels.map(([channel, kind]) => link.commands.publish(channel, fuzz.next(kind))));
      }
      // Then every message type with one value made invalid, as the stage ACL user publishes them on main's channels.
      const fuzzed = valueFuzzedMessages(VALUE_FUZZED, SEED, Object.keys(before));
      const toMainSent = fuzzed.filter((m) => m.kind === 'to_main').length;
      const heartbeatsSent = fuzzed.filter((m) => m.kind === 'heartbeat').length;
      // Main reads both channels on one connection, in order: once a marker sent after the garbage is counted, all
      // of the garbage is, and the counts below are the fuzzed messages' alone.
      const oversize = async () => (await droppedOnMain(serve.url)).get('to_main/oversize') ?? 0;
      const markers = await oversize();
      await link.commands.publish(keys.toMain, Buffer.alloc(MAX_CONTROL_MESSAGE_BYTES + 1));
      await expect.poll(oversize, { timeout: 30_000 }).toBe(markers + 1);
      const droppedBefore = await droppedOnMain(serve.url);
      const asStage = await RedisLink.connect({ url: (await createDocumentedUsers(suite.server()))['chorus-stage'] });
      const startedMs = performance.now();
      try {
        await publishAll(fuzzed, asStage, link, { ...keys, instances: Object.keys(before) });
      } finally {
        await asStage.close();
      }
      // Each one counted on main: invalid (a value out of its schema), unknown (a sender of a name nobody holds) or
      // fenced (a live name under a lease it does not hold).
      const counted = async () => {
        const dropped = await droppedOnMain(serve.url);
        const delta = (channel: string, reasons: readonly string[]) =>
          sumDropped(dropped, channel, reasons) - sumDropped(droppedBefore, channel, reasons);
        return [delta('to_main', ['invalid', 'unknown', 'fenced']), delta('heartbeat', ['invalid'])];
      };
      await expect.poll(counted, { timeout: 30_000 }).toEqual([toMainSent, heartbeatsSent]);
      const types = new Set(fuzzed.map((m) => m.type));
      console.log(
        `${fuzzed.length} value-fuzzed messages of ${types.size} types ` +
          `(${toMainSent} reports and ${heartbeatsSent} heartbeats as chorus-stage) published and counted in ` +
          `${Math.round(performance.now() - startedMs)} ms`,
      );
      // Every declared type was fuzzed: each report to main, the heartbeat, each command and the refusal.
      const declared = Object.keys(STAGE_TO_MAIN_SCHEMAS).length + 1 + Object.keys(MAIN_TO_STAGE_SCHEMAS).length + 1;
      expect(types.size).toBe(declared);
    } finally {
      await link.close();
    }
    // Requests sent during and after the garbage: all answered, and alike (temperature 0, same prompt).
    const after = await Promise.all([
      chat(serve.url, PROMPT, { max_tokens: 24 }),
      chat(serve.url, PROMPT, { max_tokens: 24 }),
    ]);
    const all = [...(await Promise.all(answers)), ...after];
    for (const a of all) {
      expect(a.error).toBeNull();
      expect(a.text).toBe(all[0].text);
      expect(a.pcm16.length).toBe(all[0].pcm16.length);
    }
    expect(all[0].pcm16.length).toBeGreaterThan(0);

    // No instance lost or replaced, none holds a request (no black hole), and main said nothing of a loss.
    expect(await remoteIdle(serve)).toEqual(before);
    expect((await health(serve.url)).httpStatus).toBe(200);
    expect(serve.output().slice(mainFrom)).not.toContain('"msg":"stage lost"');
    // Main counted what it dropped on its two channels, by reason, and logged each channel and reason once.
    const dropped = await droppedOnMain(serve.url);
    for (const reason of ['malformed', 'foreign', 'version', 'invalid']) {
      expect(dropped.get(`heartbeat/${reason}`)).toBeGreaterThan(0);
      expect(dropped.get(`to_main/${reason}`)).toBeGreaterThan(0);
    }
    expect(dropped.get('heartbeat/fenced')).toBeGreaterThan(0); // forged heartbeats under leases nobody holds
    const mainLines = droppedLines(serve.output().slice(mainFrom));
    expect(mainLines.length).toBeGreaterThan(0);
    expect(mainLines.length).toBeLessThanOrEqual(dropped.size);
    // Each stage dropped the garbage on its own channel, and logged it once per reason too.
    for (const [stage, from] of [
      [talker, talkerFrom],
      [code2wav, code2wavFrom],
    ] as const) {
      const lines = droppedLines(stage.output().slice(from));
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.length).toBeLessThanOrEqual(7); // the reasons there are
      expect(stage.output()).not.toContain('refused');
    }

    for (const pid of Object.values(before)) process.kill(pid, 'SIGTERM');
    expect(await talker.exited).toBe(0);
    expect(await code2wav.exited).toBe(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(await suite.server().keys()).toEqual([]); // leases released, nothing else left (of either case)
  }, 300_000);
});
