/**
 * KV-aware routing with a remote Thinker instance (issue 29): one Thinker replica in main's pipeline and one
 * `chorus stage --stage thinker` instance joined over a real redis-server, every edge on Redis. Two conversations
 * start together and land on different instances (the second sees the first queued); each later turn goes where its
 * history is, counting on exactly the positions that instance then reuses, the remote's from the reports it sends
 * over Redis. The remote instance is killed: a turn routed once it is back (a new process under the same name, its
 * cache empty) counts on nothing it held before, and nothing is left in Redis at the end.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { ChatMessage } from '../../src/common/engine.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startStage, type Started } from '../helpers/deployment.ts';
import { heldReport, type Decision } from '../helpers/kvReports.ts';
import { collect } from '../helpers/engine.ts';
import { redisForSuite } from '../helpers/redisServer.ts';

const TEXT_ONLY = join(import.meta.dirname, '..', '..', 'configs', 'text-only.yaml');
const REMOTE = 'thinker#r1';

/**
 * text-only.yaml with every edge on Redis (the Thinker's text to main): instances on other hosts may join it, and
 * /health waits for one (min_replicas) beside the local replica.
 */
function redisConfig(dir: string, url: string): string {
  const connectors = [
    'connectors:',
    '  redis:',
    '    kind: redis',
    `    options: { url: '${url}', key_prefix: kvroute, ttl_seconds: 60 }`,
    '',
  ].join('\n');
  const file = join(dir, 'thinkers.yaml');
  const text = readFileSync(TEXT_ONLY, 'utf8').replace('stages:', `${connectors}stages:`);
  writeFileSync(file, text.replace('    final_output: true', '    min_replicas: 1\n    final_output: true'));
  return file;
}

const decisions: Decision[] = [];
const onDecision = (m: unknown) => decisions.push(m as Decision);

const words = (seed: number, length: number) =>
  Array.from({ length }, (_, i) => ['sing', 'of', 'the', 'long', 'grey', 'sea'][(i * 7 + seed) % 6]).join(' ');

/**
 * A conversation's first message is long and its later ones short, so that a later turn's history dwarfs what it adds:
 * the instance holding the history is then clearly faster to prefill it (the router estimates each instance's
 * prefill from its own measured rate, and two instances' rates, measured on prompts of different lengths on a loaded
 * machine, can differ by a few times; with a history only ~4x the new message that could outweigh the cache).
 */
const FIRST_WORDS = 240;
const LATER_WORDS = 16;

describe('KV-aware routing with a remote Thinker instance over Redis', () => {
  const suite = redisForSuite();
  let engine: Orchestrator;
  let config: string;
  const dir = mkdtempSync(join(tmpdir(), 'chorus-kv-remote-'));
  let remote: Started;

  const readyThinkers = () =>
    engine
      .health()
      .filter((s) => s.status === 'ready')
      .map((s) => s.instance);
  const joinRemote = async () => {
    remote = startStage(config, 'thinker', 'r1', suite.env());
    await expect.poll(readyThinkers, { timeout: 60_000, interval: 50 }).toContain(REMOTE);
  };

  beforeAll(async () => {
    subscribe(channelNames.routeDecision, onDecision);
    config = redisConfig(dir, suite.server().url);
    engine = await Orchestrator.start(await loadConfig(config));
  }, 120_000);

  afterAll(async () => {
    unsubscribe(channelNames.routeDecision, onDecision);
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("turns follow the remote instance's reported blocks; a restarted instance counts on nothing it held", async () => {
    expect(
      engine
        .health()
        .filter((s) => s.status === 'waiting')
        .map((s) => s.stageId),
    ).toEqual(['thinker']);
    await joinRemote(); // started by the test: killed when it ends, whatever happened
    expect(engine.health().filter((s) => s.status !== 'ready')).toEqual([]);
    const conversation = (seed: number) => {
      const messages: ChatMessage[] = [];
      let turns = 0;
      return async () => {
        const length = turns === 0 ? FIRST_WORDS : LATER_WORDS;
        messages.push({ role: 'user', content: `${seed} ${words(seed + turns++, length)}` });
        const decided = decisions.length; // generate() routes before it returns
        const handle = engine.generate({ messages: [...messages], modalities: ['text'], sampling: { maxTokens: 16 } });
        const { text, done } = await collect(handle);
        messages.push({ role: 'assistant', content: text });
        expect(done.error).toBeUndefined();
        const decision = decisions[decided];
        return { decision, cached: done.usage.cachedTokens ?? 0, prompt: done.usage.promptTokens };
      };
    };
    const a = conversation(1);
    const b = conversation(2);
    // Sent together: the second is routed while the first waits for its first token on the instance it took.
    const [lastA, lastB] = await Promise.all([a(), b()]);
    expect(new Set([lastA.decision.instance, lastB.decision.instance])).toEqual(new Set(['thinker#0', REMOTE]));
    const [onRemote, onLocal] = lastA.decision.instance === REMOTE ? [a, b] : [b, a];
    let [lastRemote, lastLocal] = lastA.decision.instance === REMOTE ? [lastA, lastB] : [lastB, lastA];

    for (let n = 1; n <= 2; n++) {
      await Promise.all([heldReport(REMOTE, lastRemote.prompt), heldReport('thinker#0', lastLocal.prompt)]);
      const [r, l] = [await onRemote(), await onLocal()];
      expect(r.decision).toMatchObject({ instance: REMOTE, reason: 'kv_overlap' });
      expect(l.decision).toMatchObject({ instance: 'thinker#0', reason: 'kv_overlap' });
      for (const [t, before] of [
        [r, lastRemote],
        [l, lastLocal],
      ] as const) {
        expect(t.cached).toBeGreaterThanOrEqual(16 * Math.floor(before.prompt / 16)); // every block of the last turn
        expect(t.decision.cachedPositions).toBe(t.cached); // the router counted on exactly what was reused
      }
      [lastRemote, lastLocal] = [r, l];
    }

    // The remote instance dies; main loses it by its heartbeat; a new process takes its name (its cache empty).
    remote.child.kill('SIGKILL');
    await remote.exited;
    await expect.poll(readyThinkers, { timeout: 10_000, interval: 50 }).not.toContain(REMOTE);
    await joinRemote();
    const moved = await onRemote();
    // Nothing holds this conversation now: wherever it went, the router counted on no reused position.
    expect(moved.cached).toBe(0);
    expect(moved.decision.cachedPositions).toBe(0);
    await heldReport(moved.decision.instance, moved.prompt);
    const after = await onRemote();
    expect(after.decision).toMatchObject({ instance: moved.decision.instance, reason: 'kv_overlap' });
    expect(after.decision.cachedPositions).toBe(after.cached);
    expect(after.cached).toBeGreaterThanOrEqual(16 * Math.floor(moved.prompt / 16));

    // The remote instance leaves cleanly, then main: nothing of the deployment is left in Redis.
    remote.child.kill('SIGTERM');
    expect(await remote.exited).toBe(0);
    await engine.close();
    expect(await suite.server().keys()).toEqual([]);
  }, 180_000);
});
