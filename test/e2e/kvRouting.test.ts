/**
 * KV-aware routing on a real pipeline (issue 29): two Thinker replicas, each with its prefix cache; a chat client
 * resending its growing history. Every turn after the first goes to the replica whose cache holds the conversation:
 * sent at once, on the router's prediction (the last prompt ended there); after the replica's report, counting on
 * exactly the positions the replica then reuses; when that replica is killed, the next turn
 * goes to the other one (its blocks forgotten at once), is computed there in full, and the turn after it follows.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { ChatMessage } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { heldReport, next, type Decision } from '../helpers/kvReports.ts';
import { collect, configWith } from '../helpers/engine.ts';

let engine: Orchestrator;
const decisions: Decision[] = [];
const onDecision = (m: unknown) => decisions.push(m as Decision);

beforeAll(async () => {
  subscribe(channelNames.routeDecision, onDecision);
  engine = await Orchestrator.start(
    configWith('text-only.yaml', { 'final_output: true': 'replicas: 2\n    final_output: true' }),
  );
}, 120_000);

afterAll(async () => {
  unsubscribe(channelNames.routeDecision, onDecision);
  await engine?.close();
});

const words = (turn: number, length = 60) =>
  Array.from({ length }, (_, i) => ['ask', 'tell', 'more', 'about', 'the', 'river'][(i + turn) % 6]).join(' ');

describe('KV-aware routing across two Thinker replicas', () => {
  it("each turn goes where its conversation's KV is; a killed replica's turns move and follow again", async () => {
    const messages: ChatMessage[] = [];
    const turn = async (n: number, length?: number) => {
      messages.push({ role: 'user', content: `${n} ${words(n, length)}` });
      const handle = engine.generate({ messages: [...messages], modalities: ['text'], sampling: { maxTokens: 24 } });
      const { text, done } = await collect(handle);
      messages.push({ role: 'assistant', content: text });
      return { decision: decisions.at(-1)!, cached: done.usage.cachedTokens ?? 0, prompt: done.usage.promptTokens };
    };
    let last = await turn(0);
    const holder = last.decision.instance;
    // At once, as a client sends its next turn when the answer ends: no report says yet what the replica holds;
    // the router counts on the prompt that ended there.
    const soon = await turn(1);
    expect(soon.decision).toMatchObject({ instance: holder, reason: 'kv_overlap' });
    expect(soon.decision.cachedPositions).toBe(16 * Math.floor(last.prompt / 16)); // every block of that prompt
    expect(soon.cached).toBeGreaterThanOrEqual(soon.decision.cachedPositions);
    last = soon;
    for (let n = 2; n <= 3; n++) {
      await heldReport(holder, last.prompt);
      const t = await turn(n);
      expect(t.decision).toMatchObject({ instance: holder, reason: 'kv_overlap' });
      expect(t.cached).toBeGreaterThanOrEqual(16 * Math.floor(last.prompt / 16)); // every block of the last prompt
      expect(t.decision.cachedPositions).toBe(t.cached); // the router counted on exactly what the replica reused
      last = t;
    }

    const died = next(channelNames.stageDied, (m) => (m as { instance: string }).instance === holder);
    engine.workerOf(holder)!.kill('SIGKILL');
    await died;
    const moved = await turn(4);
    const other = moved.decision.instance;
    expect(other).not.toBe(holder);
    expect(moved.cached).toBe(0);
    await heldReport(other, moved.prompt);
    // A short turn: nearly all of its prompt is in the other replica's cache. The router weighs the uncached part at
    // each replica's prefill rate, learned from first tokens' wall times, and a 60-word turn once went back to the
    // restarted replica in a loaded CI run (not reproduced since): the estimate allows that when the two learned
    // rates are further apart than the cached share (5/6) makes up for. 'kv_overlap' if the killed replica is back
    // by now, 'single' while it restarts: here.
    const after = await turn(5, 4);
    expect(after.decision.instance, JSON.stringify({ after: after.decision, moved: moved.decision })).toBe(other);
    expect(after.cached).toBe(after.decision.cachedPositions);
    expect(after.cached).toBeGreaterThanOrEqual(16 * Math.floor(moved.prompt / 16));
  }, 120_000);
});
