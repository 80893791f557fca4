/**
 * Speech lead (issue 41 item 5): while a stage holds many speaking answers, those whose output leads their speech by
 * `leadMs` wait until the lead falls below it, then catch up together (src/sched/SpeechLead.ts); the Thinker leaves
 * them out of its steps and wakes when the first is due.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CATCH_UP_SHARE, SpeechLead } from '../../src/sched/SpeechLead.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const leadMs = 10_000;
const MS_PER_TOKEN = 160;

/** `n` answers speaking since 0, each with `tokens[id]` tokens written. */
function answers(n: number, minAnswers = n) {
  const lead = new SpeechLead({ leadMs, minAnswers });
  const tokens = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    lead.started(`a${i}`, 0);
    tokens.set(`a${i}`, 0);
  }
  const speechMs = (id: string) => (tokens.has(id) ? tokens.get(id)! * MS_PER_TOKEN : null);
  return { lead, tokens, speechMs };
}

describe('SpeechLead', () => {
  it('holds answers far ahead of their speech, and wakes when the first falls below the lead', () => {
    const { lead, tokens, speechMs } = answers(3);
    tokens.set('a0', 100); // 16 s of speech written
    tokens.set('a1', 95); // 15.2 s
    tokens.set('a2', 20); // 3.2 s: behind, steps
    const plan = lead.plan(2000, speechMs);
    expect(plan?.requestIds).toEqual(new Set(['a0', 'a1']));
    // a1 leads by 13.2 s at 2 s: at leadMs 3.2 s later.
    expect(plan?.wakeAtMs).toBe(2000 + 95 * MS_PER_TOKEN - 2000 - leadMs);
  });

  it('never paces fewer than minAnswers speaking answers, nor one whose speech it cannot tell', () => {
    const { lead, tokens, speechMs } = answers(2, 3);
    tokens.set('a0', 500);
    expect(lead.plan(1000, speechMs)).toBeNull();
    lead.started('x', 0); // three now, but x's speech is unknown
    tokens.set('a1', 500);
    expect(lead.plan(1000, speechMs)?.requestIds).toEqual(new Set(['a0', 'a1']));
    lead.removed('a1');
    expect(lead.plan(1000, speechMs)).toBeNull();
  });

  it('steps every answer within the band once one is due, until each leads by a quarter more', () => {
    const { lead, tokens, speechMs } = answers(2);
    const high = leadMs * (1 + CATCH_UP_SHARE);
    tokens.set('a0', Math.ceil(high / MS_PER_TOKEN)); // both at the top of the band at 0: held
    tokens.set('a1', Math.ceil(high / MS_PER_TOKEN) + 5);
    expect(lead.plan(0, speechMs)?.requestIds.size).toBe(2);
    // At 2700 ms a0 leads by 9.94 s: due; a1 (10.74 s) is within the band and joins it.
    let nowMs = 2700;
    expect(lead.plan(nowMs, speechMs)).toBeNull();
    // Each step writes a token for those stepped; both stay in until they lead by `high`.
    let steps = 0;
    for (;;) {
      const held = lead.plan(nowMs, speechMs)?.requestIds ?? new Set<string>();
      if (held.size === 2) break;
      for (const id of ['a0', 'a1']) if (!held.has(id)) tokens.set(id, tokens.get(id)! + 1);
      nowMs += 10;
      steps++;
    }
    for (const id of ['a0', 'a1']) expect(speechMs(id)! - nowMs).toBeGreaterThanOrEqual(high - MS_PER_TOKEN);
    expect(steps).toBeGreaterThan(10); // a batch, not a token at a time
  });

  it('keeps every answer ahead of its speech over a long run, stepping a share of the time', () => {
    // Sixteen answers written by a stage whose steps take 12 ms, a token each, for 60 s of speech.
    const { lead, tokens, speechMs } = answers(16);
    let stepped = 0;
    let worstLeadMs = Infinity;
    for (let nowMs = 0; nowMs < 60_000;) {
      const plan = lead.plan(nowMs, speechMs);
      const stepping = [...tokens.keys()].filter((id) => !plan?.requestIds.has(id));
      if (stepping.length === 0) {
        expect(plan!.wakeAtMs).toBeGreaterThan(nowMs);
        nowMs = Math.ceil(plan!.wakeAtMs);
        continue;
      }
      for (const id of stepping) tokens.set(id, tokens.get(id)! + 1);
      nowMs += 12;
      stepped += 12;
      if (nowMs > 5000) for (const id of tokens.keys()) worstLeadMs = Math.min(worstLeadMs, speechMs(id)! - nowMs);
    }
    expect(worstLeadMs).toBeGreaterThan(leadMs - 2 * MS_PER_TOKEN);
    // 16 answers need a token each 160 ms: a 12 ms step in every 160 ms, once caught up (plus the first 12.5 s).
    expect(stepped / 60_000).toBeLessThan(0.3);
  });
});

describe('the Thinker paces spoken answers to their speech (chunk_policy.speech_lead_ms)', () => {
  const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;
  afterEach(() => vi.useRealTimers());

  /** A Thinker with `n` spoken answers of 160 ms a token, paced at 1 s from two answers on. */
  function thinker(n: number) {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const runner = new KvLengthRunner();
    const ctx = stageContext(spec, new FakeAdapter());
    const policy = { ...ctx.chunkPolicy, speechLeadMs: 1000, speechLeadMinAnswers: 2 };
    const core = new ThinkerCore({ ...ctx, chunkPolicy: policy }, runner);
    for (let i = 0; i < n; i++)
      core.add({
        type: 'add',
        requestId: `r${i}`,
        sampling: { ...spec.defaultSamplingParams, maxTokens: 1000, ignoreEos: true },
        downstream: [
          { instance: 'main', stageId: 'main' },
          { instance: 'talker#0', stageId: 'talker' },
        ],
        upstreams: [],
        args: { promptTokenIds: [1, 2, 3], speechMsPerToken: MS_PER_TOKEN },
        firstChunkDeadline: Date.now() + 30_000,
      });
    const written = (id: string) => runner.steps.filter((s) => s.seqId === id && s.sample).length;
    return { core, runner, written };
  }

  it('stops stepping an answer that leads by the bound, wakes when it falls below, and catches up', () => {
    const { core, written } = thinker(2);
    core.step(); // the prompts
    for (const id of ['r0', 'r1']) core.onKindMessage(id, { type: 'first_audio' });
    while (core.step());
    // Both ran until they led by 1.25 s (8 tokens of 160 ms), none of the clock gone by.
    expect(written('r0')).toBe(Math.ceil((1000 * (1 + CATCH_UP_SHARE)) / MS_PER_TOKEN));
    expect(written('r1')).toBe(written('r0'));
    const wakeAtMs = core.nextWakeAtMs()!;
    expect(wakeAtMs).toBe(Date.now() + written('r0') * MS_PER_TOKEN - 1000);
    vi.setSystemTime(wakeAtMs - 1);
    expect(core.step()).toBe(false);
    vi.setSystemTime(wakeAtMs);
    const before = written('r0');
    while (core.step());
    expect(written('r0') - before).toBeGreaterThan(1); // caught up by a quarter of the lead, both in each step
    expect(written('r1')).toBe(written('r0'));
  });

  it('leaves a lone answer unpaced (fewer than speech_lead_min_answers)', () => {
    const { core, written } = thinker(1);
    core.step(); // the prompt, and its first token
    core.onKindMessage('r0', { type: 'first_audio' });
    for (let i = 0; i < 30; i++) expect(core.step()).toBe(true);
    expect(written('r0')).toBe(31); // 5 s of speech ahead, well past the 1 s lead
    expect(core.nextWakeAtMs()).toBeNull();
  });
});
