/**
 * `chorus bench --turns` at tiny scale against real servers: conversations of 3 turns over Realtime (one session,
 * the server's conversation) and over chat (the history resent) on a running server, refused turns counted at their
 * index, a --compare-config run whose two servers alternate A B B A, and a --config run with its per-turn limit.
 * Checks the report's shape and what must hold on any machine (every turn answered, each turn's input longer than the
 * last, limits positive and finite); never speed.
 */
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBenchConfig, startInProcessServer } from '../../bench/ttfp/inProcessServer.ts';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';
import { formatTurns } from '../../bench/ttfp/turns/formatTurns.ts';
import { writeResultFiles } from '../../bench/report/writeResultFiles.ts';
import { runTurnsBench, type TurnsBenchOptions } from '../../bench/ttfp/turns/runTurnsBench.ts';
import type { TurnsResult, TurnsRun } from '../../bench/ttfp/turns/turnsResult.ts';
import { turnDetails } from '../../bench/ttfp/turns/turnDetails.ts';
import { logger } from '../../src/common/log.ts';
import { repoRoot } from '../../src/config/paths.ts';

const CONFIG = path.join(repoRoot(), 'configs', 'tiny-omni-text-in.yaml');
const TURNS = 3;

const base = {
  concurrency: [1],
  turns: TURNS,
  conversations: 1,
  inputLen: 8,
  outputLen: 4, // small answers: the conversation grows by the user's 8 tokens, 4 of answer and the template's
  warmup: 0,
  seed: 0,
  compareSync: false,
  timeoutMs: 60_000,
  progress: null,
  log: logger,
  command: 'test',
} satisfies Partial<TurnsBenchOptions>;

/** What must hold for a run whose turns all completed, on any machine. */
function expectAnswered(run: TurnsRun): void {
  const errors = run.turns.flatMap((t) => t.errors);
  expect(run.failed, errors.join('; ')).toBe(0);
  expect(run.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
  for (const t of run.turns) {
    expect([t.completed, t.failed]).toEqual([run.conversations, 0]);
    expect(t.p50_ttft_ms!).toBeGreaterThan(0);
    expect(t.p50_ttfp_ms!).toBeGreaterThan(0);
    // Read whatever the server reports: 0 without a prefix cache, at most the whole input with one.
    expect(t.mean_cached_tokens!).toBeGreaterThanOrEqual(0);
    expect(t.mean_cached_tokens!).toBeLessThanOrEqual(t.mean_input_tokens!);
    expect(t.cached_share!).toBeGreaterThanOrEqual(0);
  }
  // Each turn's prompt is the conversation so far: it holds the last turn's prompt, its answer and a new message.
  const inputs = run.turns.map((t) => t.mean_input_tokens!);
  for (let i = 1; i < inputs.length; i++) expect(inputs[i]).toBeGreaterThan(inputs[i - 1] + base.inputLen);
  expect(run.turns[0].ttft_over_turn1).toBe(1);
}

describe('chorus bench --turns over a running server', () => {
  let server: Awaited<ReturnType<typeof startInProcessServer>>;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chorus-bench-turns-'));
    server = await startInProcessServer((await readBenchConfig(CONFIG)).graph, logger);
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(['realtime', 'chat'] as const)(
    'runs %s conversations of 3 turns: a row per turn, the input growing, none failed',
    async (protocol) => {
      const details: ReturnType<typeof turnDetails> = [];
      const result = await runTurnsBench({
        ...base,
        target: { kind: 'url', url: server.baseUrl, apiKey: null },
        protocol,
        onRun: (run, traces) => details.push(...turnDetails(run, traces)),
      });
      expect(result.runs).toHaveLength(1);
      const [run] = result.runs;
      expect([run.conversations, run.turns_per_conversation, run.completed]).toEqual([1, TURNS, TURNS]);
      expectAnswered(run);
      expect(result.ratios).toEqual([]); // one server: nothing to compare

      // results.json round-trips; results.md has the table; turns.json has every turn of every conversation.
      const out = path.join(dir, protocol);
      const files = await writeResultFiles(out, result, formatTurns(result), { turns: details });
      const json = JSON.parse(await readFile(files.json, 'utf8')) as TurnsResult;
      expect(json.runs[0].turns).toHaveLength(TURNS);
      expect(json.options).toMatchObject({ protocol, turns: TURNS, conversations: 1, output_len: base.outputLen });
      const md = await readFile(files.markdown, 'utf8');
      expect(md).toContain('| Turn | Answered | Failed | Input tokens |');
      expect(md.match(/^\| [123] \| 1 \| 0 \|/gm)).toHaveLength(TURNS);
      const turns = JSON.parse(await readFile(files.turns, 'utf8')) as typeof details;
      expect(turns.map((t) => [t.conversation, t.turn, t.ok])).toEqual([
        [0, 1, true],
        [0, 2, true],
        [0, 3, true],
      ]);
      expect(turns.every((t) => t.request_id !== null && t.cached_tokens !== null)).toBe(true);
    },
    120_000,
  );

  it.each(['realtime', 'chat'] as const)(
    '%s requests sent together under one --system-len prompt: the one instance computes it once',
    async (protocol) => {
      const result = await runTurnsBench({
        ...base,
        target: { kind: 'url', url: server.baseUrl, apiKey: null },
        protocol,
        turns: 1,
        conversations: 4,
        concurrency: [4],
        systemLen: 120,
        seed: protocol === 'chat' ? 1 : 2, // a system prompt of its own: none the other protocol's run left cached
      });
      const [run] = result.runs;
      expect([run.completed, run.failed]).toEqual([4, 0]);
      expect(result.options.system_len).toBe(120);
      // One computed it; three copied its whole blocks (and the template's shared tokens after it: the figure may
      // fall a little under 1). Each computing it alone would be 4.
      expect(run.system_computed_times!).toBeGreaterThan(0.5);
      expect(run.system_computed_times!).toBeLessThan(1.3);
      expect(formatTurns(result)).toMatch(/positions computed \(the 120-token system prompt [01]\.\d\d times\)/);
    },
    120_000,
  );

  it.each(['realtime', 'chat'] as const)(
    'counts refused %s turns at their turn index, names the error, and goes on to the next turn',
    async (protocol) => {
      const result = await runTurnsBench({
        ...base,
        target: { kind: 'url', url: server.baseUrl, apiKey: null },
        protocol,
        outputLen: 100_000, // above any server's cap: every answer is refused before it starts
      });
      const [run] = result.runs;
      expect([run.completed, run.failed]).toEqual([0, TURNS]);
      expect(run.turns.map((t) => [t.turn, t.failed, t.p50_ttfp_ms])).toEqual([
        [1, 1, null],
        [2, 1, null],
        [3, 1, null],
      ]);
      for (const t of run.turns) expect(t.errors.join('; ')).toMatch(/max_(output_)?tokens/);
    },
    60_000,
  );
});

describe('chorus bench --turns --compare-config', () => {
  let dir: string;
  let result: TurnsResult;
  const sends: { variant: string; conversation: number; atMs: number }[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chorus-bench-turns-'));
    const other = path.join(dir, 'other.yaml'); // the same YAML under another name: a second server to compare
    await copyFile(CONFIG, other);
    result = await runTurnsBench({
      ...base,
      turns: 2,
      conversations: undefined, // the default: twice the concurrency, one per half
      target: { kind: 'config', file: CONFIG },
      compareConfig: other,
      protocol: 'realtime',
      limit: false, // --skip-limit (the per-turn limit has its own test below)
      onRun: (run, traces: readonly (readonly RequestTrace[])[]) =>
        traces.forEach((c, conversation) => sends.push({ variant: run.variant, conversation, atMs: c[0].startMs })),
    });
  }, 240_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs both servers at once, the conversations in halves A B B A, and reports their ratio by turn', () => {
    expect(result.options.interleaved).toBe(true);
    expect(result.runs.map((r) => [r.variant, r.conversations, r.blocks, r.failed])).toEqual([
      ['tiny-omni-text-in', 2, 2, 0],
      ['other', 2, 2, 0],
    ]);
    const order = sends.sort((x, y) => x.atMs - y.atMs).map((s) => `${s.variant}${s.conversation}`);
    expect(order).toEqual(['tiny-omni-text-in0', 'other0', 'other1', 'tiny-omni-text-in1']);
    expect(result.ratios).toHaveLength(1);
    const [ratio] = result.ratios;
    expect([ratio.concurrency, ratio.variant, ratio.over_variant]).toEqual([1, 'tiny-omni-text-in', 'other']);
    expect(ratio.turns.map((t) => t.turn)).toEqual([1, 2]);
    for (const t of ratio.turns) {
      expect(t.ttft!).toBeGreaterThan(0);
      expect(t.ttfp!).toBeGreaterThan(0);
    }
    // Same conversations and seeds, same models: the same prompt lengths on both servers, turn by turn.
    const [a, b] = result.runs;
    expect(a.turns.map((t) => t.mean_input_tokens)).toEqual(b.turns.map((t) => t.mean_input_tokens));
    expect(result.turn_limits).toBeNull(); // --skip-limit
  });
});

describe('chorus bench --turns --config: the per-turn limit', () => {
  let dir: string;
  let result: TurnsResult;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chorus-bench-turns-'));
    result = await runTurnsBench({
      ...base,
      target: { kind: 'config', file: CONFIG },
      protocol: 'realtime',
      limitRepeats: 1,
    });
  }, 240_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("measures each turn's new positions over its cached past: a positive, finite limit and TTFP / limit", () => {
    const [run] = result.runs;
    expectAnswered(run);
    const limits = result.turn_limits!;
    expect(limits).toMatchObject({ variant: run.variant, concurrency: 1, repeats: 1, goal: 1.3 });
    expect(limits.turns.map((l) => l.turn)).toEqual([1, 2, 3]);
    for (const l of limits.turns) {
      const row = run.turns[l.turn - 1];
      // The plan comes from the run's own usage: the whole input, the cached part from the server's figure.
      expect(l.input_tokens).toBe(row.p50_input_tokens);
      expect(l.cached_tokens).toBeLessThan(l.input_tokens);
      expect(l.thinker_new_positions + l.cached_tokens).toBe(l.input_tokens);
      expect(l.talker_cached_rows).toBeLessThanOrEqual(l.cached_tokens);
      for (const ms of Object.values(l.median)) {
        expect(Number.isFinite(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(0);
      }
      expect(l.median.total_ms).toBeGreaterThan(0);
      expect(Number.isFinite(l.ttfp_over_limit!)).toBe(true);
      expect(l.ttfp_over_limit!).toBeGreaterThan(0);
    }
    // From turn 2 on the conversation's earlier turns are cached (tiny-omni-text-in has the prefix cache on).
    expect(limits.turns[2].cached_tokens).toBeGreaterThan(0);
    expect(limits.turns[2].talker_cached_rows).toBeGreaterThan(0);
  });

  it('prints "Limit (ms)" and "TTFP / limit" beside the c=1 run, and writes them to results.json and .md', async () => {
    const text = formatTurns(result);
    expect(text).toContain('| TTFP / turn 1 | Limit (ms) | TTFP / limit |\n');
    const cells = text
      .split('\n')
      .filter((l) => /^\| [123] \| 1 \| 0 \|/.test(l))
      .map((l) => l.split('|').slice(-3, -1).map(Number));
    expect(cells).toHaveLength(3);
    for (const [limitMs, ratio] of cells) {
      expect(limitMs).toBeGreaterThan(0);
      expect(Number.isFinite(ratio) && ratio > 0).toBe(true);
    }
    const files = await writeResultFiles(path.join(dir, 'limit'), result, formatTurns(result));
    const json = JSON.parse(await readFile(files.json, 'utf8')) as TurnsResult;
    expect(json.turn_limits!.turns).toHaveLength(3);
    expect(await readFile(files.markdown, 'utf8')).toContain('| Limit (ms) | TTFP / limit |');
  });
});
