/**
 * `chorus bench` at tiny scale against real servers: the in-process server it starts itself (--config, async
 * and sync), and a running server by URL over the chat protocol. Checks the results' shape and what must hold
 * whatever the machine's speed (never speed goals: those live in the bench itself).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBenchConfig, startInProcessServer } from '../../bench/ttfp/inProcessServer.ts';
import { requestDetails, type RequestDetail } from '../../bench/ttfp/report/requestDetails.ts';
import { firstPacketBreakdown, formatBreakdown } from '../../bench/ttfp/report/stepBreakdown.ts';
import { readStepTraces } from '../../bench/ttfp/report/stepTraces.ts';
import { writeResultFiles } from '../../bench/report/writeResultFiles.ts';
import { formatReport } from '../../bench/ttfp/report/formatReport.ts';
import type { BenchResult, RunRow } from '../../bench/ttfp/results.ts';
import { runServeBench, type ServeBenchOptions } from '../../bench/ttfp/runServeBench.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { defaultConfigPath } from '../../src/config/paths.ts';
import { logger } from '../../src/common/log.ts';
import { STEP_TRACE_ENV } from '../../src/worker/StepTrace.ts';
import { ByteTokenizer } from '../../src/tokenizer/index.ts';

const INPUT_LEN = 8;
const OUTPUT_LEN = 8;
const templateTokens = new ByteTokenizer(512).applyChatTemplate([{ role: 'user', content: '' }]).length;

const base = {
  concurrency: [1],
  numPrompts: 2,
  inputLen: INPUT_LEN,
  outputLen: OUTPUT_LEN,
  warmup: 1,
  seed: 0,
  timeoutMs: 60_000,
  progress: null,
  log: logger,
  command: 'test',
} satisfies Partial<ServeBenchOptions>;

/** What must hold for any run that completed, on any machine. */
function expectSane(r: RunRow): void {
  expect(r.failed, r.errors.join('; ')).toBe(0);
  expect(r.completed).toBe(r.num_prompts);
  for (const key of ['ttft', 'tpot', 'itl', 'ttfp', 'e2e'] as const) {
    const [mean, p50, p99] = [r[`mean_${key}_ms`], r[`p50_${key}_ms`], r[`p99_${key}_ms`]];
    for (const v of [mean, p50, p99]) {
      expect(Number.isFinite(v), `${key}: ${v}`).toBe(true);
      expect(v!).toBeGreaterThanOrEqual(0);
    }
    expect(p99!).toBeGreaterThanOrEqual(p50!);
  }
  expect(r.mean_e2e_ms!).toBeGreaterThanOrEqual(r.mean_ttfp_ms!);
  expect(r.mean_e2e_ms!).toBeGreaterThanOrEqual(r.mean_ttft_ms!);
  expect(r.p50_ttft_ms!).toBeGreaterThan(0);
  expect(r.mean_rtf!).toBeGreaterThan(0);
  expect(Number.isFinite(r.mean_rtf)).toBe(true);
  expect(r.audio_seconds).toBeGreaterThan(0);
  expect(r.underruns).toBeGreaterThanOrEqual(0);
  expect(r.duration_s).toBeGreaterThan(0);
  // ignore_eos: exactly output-len text tokens, and the prompt is exactly input-len tokens plus the template.
  expect(r.mean_text_tokens).toBe(OUTPUT_LEN);
  expect(r.mean_prompt_tokens).toBe(INPUT_LEN + templateTokens);
}

describe('chorus bench (the servers it starts, async vs sync, realtime)', () => {
  let result: BenchResult;
  let dir: string;
  const details: RequestDetail[] = [];
  const sends: { variant: string; concurrency: number; index: number; atMs: number }[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'chorus-bench-'));
    process.env[STEP_TRACE_ENV] = path.join(dir, 'steps'); // what --trace-steps does: the stages inherit it
    result = await runServeBench({
      ...base,
      concurrency: [1, 2],
      target: { kind: 'config', file: defaultConfigPath() },
      protocol: 'realtime',
      compareSync: true,
      limitRepeats: 3,
      throughputRepeats: 3,
      stepTraceDir: path.join(dir, 'steps'),
      onRun: (row, traces, timings) => {
        details.push(...requestDetails(row, traces, timings));
        traces.forEach((t, index) =>
          sends.push({ variant: row.variant, concurrency: row.concurrency, index, atMs: t.startMs }),
        );
      },
    });
    await writeResultFiles(dir, result, formatReport(result));
  }, 180_000);

  afterAll(async () => {
    delete process.env[STEP_TRACE_ENV];
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('traces every stage step: the first packet of a request decomposes into its own steps in each stage', async () => {
    const all = await readStepTraces(path.join(dir, 'steps'));
    const stages = ['thinker', 'talker', 'code2wav'].map((stage) => all.find((s) => s.stage === stage)!);
    const request = details.find((d) => d.async_chunk && d.engine_ttfp_ms !== null)!;
    const b = firstPacketBreakdown(stages, request.request_id!, 'code2wav', request.engine_ttfp_ms!);
    const [thinker, talker, code2wav] = b.stages;
    // The prompt's prefill and the first token's step ran in the Thinker inside the window, the Talker's prefill
    // (the prompt rows and the first token's) and its frames after it, and one Code2Wav step ended it.
    expect(thinker.ownPositions, formatBreakdown(b)).toBeGreaterThanOrEqual(INPUT_LEN + templateTokens);
    expect(talker.ownPositions).toBeGreaterThan(INPUT_LEN + templateTokens);
    expect(code2wav.ownSteps).toBe(1);
    expect(b.path[0].stage).toBe('thinker');
    // Its one Code2Wav step ends the window (a Talker step may start while it runs: another process).
    const vocoder = b.path.filter((p) => p.stage === 'code2wav');
    expect(vocoder).toHaveLength(1);
    expect(vocoder[0].atMs + vocoder[0].ms).toBeCloseTo(b.endMs - b.startMs, 2);
    for (const s of b.stages) expect(s.ownMs + s.otherMs + s.idleMs).toBeCloseTo(b.endMs - b.startMs, 2);
    // Each model run carries its process's CPU time (the account's "waiting for a core" is the window less it).
    const runs = stages.flatMap((s) => s.steps).filter((s) => s.x !== undefined);
    expect(runs.length).toBeGreaterThan(0);
    for (const s of runs) expect(s.xc).toBeGreaterThanOrEqual(0);
  });

  it('accounts every c=1 first packet to its TTFP: named parts that add up, none negative', () => {
    const accounts = result.packet_accounts!;
    expect(accounts.map((a) => [a.variant, a.concurrency])).toEqual([
      ['async', 1],
      ['sync', 1],
    ]);
    for (const a of accounts) {
      const row = result.runs.find((r) => r.variant === a.variant && r.concurrency === 1)!;
      expect(a.accounted).toBe(a.measured);
      expect(a.measured).toBe(row.completed);
      const first = a.first_packet!;
      // The walk reached the client's send through every process's marks: the parts are the whole TTFP.
      expect(first.meanTotalMs).toBeCloseTo(row.mean_ttfp_ms!, 6);
      expect(Math.abs(first.meanUnnamedMs)).toBeLessThan(1e-6);
      expect(first.parts.some((p) => p.kind === 'unnamed')).toBe(false);
      for (const stage of ['thinker', 'talker', 'code2wav'])
        expect(first.parts.find((p) => p.name === `${stage} model`)!.ms).toBeGreaterThan(0);
      // One monotonic clock in every process: no part runs backwards (a clock offset error would show here).
      for (const p of first.parts) expect(p.ms, p.name).toBeGreaterThanOrEqual(0);
      if (a.chunk_trip) expect(Math.abs(a.chunk_trip.meanUnnamedMs)).toBeLessThan(1e-6);
    }
  });

  it('writes results.json with one sane run per mode and concurrency', async () => {
    const json = JSON.parse(await readFile(path.join(dir, 'results.json'), 'utf8')) as BenchResult;
    expect(json.runs.map((r) => [r.async_chunk, r.concurrency])).toEqual([
      [true, 1],
      [true, 2],
      [false, 1],
      [false, 2],
    ]);
    for (const r of json.runs) {
      expectSane(r);
      expect(r.num_prompts).toBe(2);
      expect(r.code2wav_batch).toBeGreaterThan(0);
      // The default vocoder keeps its state per request: every frame decoded once, however the chunks fell.
      expect(r.code2wav_decode_ratio).toBe(1);
      // The bench's server reports its share of TTFP; the client cannot see the audio before the server sent it.
      expect(r.mean_server_ttfp_ms!).toBeGreaterThan(0);
      expect(r.mean_ttfp_ms!).toBeGreaterThanOrEqual(r.mean_server_ttfp_ms!);
    }
    expect(json.options.interleaved).toBe(true);
    expect(json.runs.map((r) => r.blocks)).toEqual([2, 2, 2, 2]);
    // Both servers were up: at each concurrency the halves of the prompts went A B B A.
    for (const c of [1, 2]) {
      const order = sends
        .filter((s) => s.concurrency === c)
        .sort((x, y) => x.atMs - y.atMs)
        .map((s) => `${s.variant}${s.index}`);
      expect(order).toEqual(['async0', 'sync0', 'sync1', 'async1']);
    }
    // Same prompts, seeds and models: the same amount of audio in both modes.
    const audio = json.runs.map((r) => r.audio_seconds);
    expect(new Set(audio).size).toBe(1);
  });

  it('charges each run the CPU of every process that served it, and what the cores allow at that cost', async () => {
    const { stages } = await loadConfig(defaultConfigPath());
    const threads = new Map(stages.map((s) => [s.stageId, s.engine.threads]));
    for (const r of result.runs) {
      const per = r.cpu_ms_per_request!;
      // Every stage process (by instance), main's (the server's process) and this one (the clients); the ones that
      // computed the answers used CPU (each thread's on-CPU time, to the nanosecond).
      expect(Object.keys(per).sort()).toEqual(
        ['audio-encoder#0', 'bench', 'code2wav#0', 'image-encoder#0', 'main', 'talker#0', 'thinker#0'].sort(),
      );
      for (const stage of ['bench', 'main', 'thinker#0', 'talker#0']) expect(per[stage]).toBeGreaterThan(0);
      // The cores over the sum, and no stage process past what its own threads allow (its CPU a request over them).
      const total = Object.values(per).reduce((a, x) => a + x, 0);
      const cpus = result.machine.cpus;
      const stageBounds = Object.entries(per)
        .filter(([name]) => name !== 'bench' && name !== 'main')
        .map(([name, ms]) => ms / Math.min(threads.get(name.replace(/#.*$/, ''))!, cpus));
      expect(r.cpu_bound_rps).toBeCloseTo(1000 / Math.max(total / cpus, ...stageBounds), 6);
    }
  });

  it('records provenance: machine, git SHA, distinct config hashes per mode', () => {
    expect(result.git_sha).toMatch(/^([0-9a-f]{40}(-dirty)?|unknown)$/);
    expect(result.machine.cpus).toBeGreaterThan(0);
    expect(result.config_sha256.async).toMatch(/^[0-9a-f]{64}$/);
    expect(result.config_sha256.sync).toMatch(/^[0-9a-f]{64}$/);
    expect(result.config_sha256.async).not.toBe(result.config_sha256.sync);
  });

  it('measures the critical-path limits and the async/sync ratios', () => {
    const limit = result.limit!;
    expect(limit.prompt_tokens).toBe(INPUT_LEN + templateTokens);
    for (const v of Object.values(limit.median)) expect(v).toBeGreaterThan(0);
    expect(limit.median.total_ms).toBeGreaterThanOrEqual(limit.min_total_ms);
    expect(limit.batch).toBe(1);
    // Measured before the runs, right before and right after each of the four c=1 blocks (A B B A: a quarter of the
    // repeats, rounded up) and after the stage processes stopped. The limit is the median of the 8 x 1 packets beside
    // the blocks, so it lies within those measures; the whole run's, over all 3 + 8 x 1 + 3, within all of them.
    const measures = result.limit_measures_ms!;
    expect(measures).toHaveLength(10);
    expect(result.limit_measures_cpu_ms).toHaveLength(10);
    for (const cpu of result.limit_measures_cpu_ms!) expect(cpu).toBeGreaterThan(0);
    expect(result.limit_measures_beside).toEqual([false, ...new Array<boolean>(8).fill(true), false]);
    const beside = measures.slice(1, -1);
    expect(limit.repeats).toBe(8);
    expect(limit.median.total_ms).toBeGreaterThanOrEqual(Math.min(...beside));
    expect(limit.median.total_ms).toBeLessThanOrEqual(Math.max(...beside));
    const whole = result.limit_whole_run!;
    expect(whole.repeats).toBe(14);
    expect(whole.median.total_ms).toBeGreaterThanOrEqual(Math.min(...measures));
    expect(whole.median.total_ms).toBeLessThanOrEqual(Math.max(...measures));
    // A burst of 2 through every step together: one limit per concurrency above 1.
    expect(result.burst_limits.map((l) => [l.batch, l.prompt_tokens])).toEqual([[2, INPUT_LEN + templateTokens]]);
    expect(result.ratios.map((r) => r.concurrency)).toEqual([1, 2]);
    for (const r of result.ratios) expect(r.ttfp_async_over_sync!).toBeGreaterThan(0);
    expect(result.goals.map((g) => g.name)).toEqual([
      'TTFP async/sync at c=1',
      'E2E async/sync at c=1',
      'TTFP/limit at c=1 (p50)',
      'TTFP/limit at c=1 (mean)',
      'Code2Wav frames decoded per audio frame (worst run)',
    ]);
    // The whole compute of c requests at batch c, per concurrency: every stage did work, and the bound is the
    // slowest stage or the sum over the cores, whichever is longer.
    expect(result.throughput_limits.map((l) => [l.batch, l.output_len])).toEqual([
      [1, OUTPUT_LEN],
      [2, OUTPUT_LEN],
    ]);
    for (const l of result.throughput_limits) {
      expect(Math.min(l.thinker_ms, l.talker_ms, l.code2wav_ms)).toBeGreaterThan(0);
      const sum = l.thinker_ms + l.talker_ms + l.code2wav_ms;
      expect(l.bound_ms).toBe(Math.max(l.thinker_ms, l.talker_ms, l.code2wav_ms, sum / l.cores));
      expect(l.batched_rps).toBeCloseTo(l.batch / (l.bound_ms / 1000), 6);
      // Measured passes after a warm-up on the same runners: each stage's least CPU time, so no pass beats the
      // bound; the wall times are kept beside it.
      expect(Math.min(...Object.values(l.wall_median))).toBeGreaterThan(0);
      expect([l.repeats, l.warmup, l.pass_bounds_ms.length]).toEqual([3, 1, 3]);
      expect(l.bound_ms).toBeLessThanOrEqual(Math.min(...l.pass_bounds_ms));
      expect(l.thinker_ms).toBeLessThanOrEqual(l.median.thinker_ms);
      expect(l.talker_ms).toBeLessThanOrEqual(l.median.talker_ms);
    }
    // The limit at c is the best of the measured batches up to c: never below a smaller concurrency's.
    const [one, two] = result.throughput_limits;
    expect([one.limit_rps, one.best_batch]).toEqual([one.batched_rps, 1]);
    expect(two.limit_rps).toBe(Math.max(one.batched_rps, two.batched_rps));
    expect(two.limit_rps).toBeGreaterThanOrEqual(one.limit_rps);
  });

  it('writes results.md', async () => {
    const md = await readFile(path.join(dir, 'results.md'), 'utf8');
    expect(md).toContain('| Input | Output | async_chunk | Code2Wav batch | Max concurrency |');
    expect(md.match(/^\| 8 \| 8 \|/gm)).toHaveLength(4);
  });
});

describe('chorus bench --url (a running server, chat protocol)', () => {
  let server: Awaited<ReturnType<typeof startInProcessServer>>;

  beforeAll(async () => {
    const config = await readBenchConfig(defaultConfigPath());
    server = await startInProcessServer(config.graph, logger);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('measures over SSE and reads async_chunk from the server', async () => {
    const result = await runServeBench({
      ...base,
      target: { kind: 'url', url: server.baseUrl, apiKey: null },
      protocol: 'chat',
      compareSync: false,
    });
    expect(result.limit).toBeNull(); // no config, no runners to time
    expect(result.runs).toHaveLength(1);
    expect(result.runs[0].async_chunk).toBe(true);
    expect(result.runs[0].code2wav_batch).toBeNull();
    expectSane(result.runs[0]); // includes: the prompts the client built are input-len tokens on the server too
  });

  // Here, not among the unit tier's flag checks: it is the one that loads the whole bench (14 s of imports beside CI's
  // build on a slow host, against the unit tier's 20 s bound), which this file has loaded already.
  it('says so when nothing answers at the URL', async () => {
    const target = { kind: 'url', url: 'http://127.0.0.1:9', apiKey: null } as const;
    await expect(runServeBench({ ...base, target, protocol: 'chat', compareSync: false })).rejects.toThrow(
      /cannot reach http:\/\/127\.0\.0\.1:9: .*is `chorus serve` running there\?/,
    );
  });

  it('refuses --compare-sync without a sync server to compare with', async () => {
    await expect(
      runServeBench({
        ...base,
        target: { kind: 'url', url: server.baseUrl, apiKey: null },
        protocol: 'chat',
        compareSync: true,
      }),
    ).rejects.toThrow(/--sync-url/);
  });
});
