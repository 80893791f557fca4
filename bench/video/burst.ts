/**
 * Seed 000's experiment on this machine (issue 44's goals): a burst of 32 chat completions sent at once through the
 * HTTP front end, one of them a question about a 30-frame clip (15 s at 2 fps, 810 rows), the other 31 short text
 * questions. Four arms, each `--rounds` bursts:
 *   async   the config as it is: the clip decodes in main and encodes in the encoder pool while the Thinker prefills
 *           the text requests (and the clip request's text before the clip);
 *   sync    the same config with the Thinker's engine.sync_encoding: true (no Thinker step while any request's media
 *           encodes: the encode on the Thinker's path, the baseline);
 *   text    the async server with the clip request replaced by a short text question;
 *   alone   the async server with the clip request alone (no texts): its decode, encode and prefill with nothing
 *           beside them, the least any scheduling of the burst could give the clip (the floor of async / sync).
 * Figures: the clip request's TTFT p50, async / sync (goal <= 0.5x); the 31 text requests' TTFT p50, async burst /
 * text burst (goal <= 1.2x). Beside them, each arm's CPU ms per burst by process (main with the clients, main's
 * decoder children, each stage process): where the time goes whatever the load. Every request's prompt is its own
 * (the round and index in it) and every round's clip has its own colours, so no cache serves a burst from an earlier
 * one. TTFT is the client's, to the first streamed content. With --together the texts are sent once the clip request
 * is admitted (see burst()): the seed's batch at the engine. With --steps each burst also gives the clip's chain piece
 * by piece from the stages' step traces (burstSteps.ts): when it reached the encoder, its encode, its rows at the
 * Thinker, the Thinker's steps with it, and the Thinker's time on the texts before its first token.
 *
 *   npx tsx bench/video/burst.ts [--config configs/tiny-omni.yaml] [--rounds 3] [--requests 32] [--together] [--steps]
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { channelNames, CLOCK_TICKS_PER_SECOND, monotonicMs, STEP_TRACE_ENV } from '../../src/basics.ts';
import { parseConfig } from '../../src/index.ts';
import { benchLogger } from '../benchLogger.ts';
import { addCpuBetween, BENCH_PROCESS, cpuSnapshot } from '../ttfp/cpuTime.ts';
import { gitSha, median } from '../common.ts';
import { readBenchConfig, startInProcessServer } from '../ttfp/inProcessServer.ts';
import { benchClip, videoQuestion } from './benchClip.ts';
import { streamedTtft } from '../streamChat.ts';
import { readProcessTraces } from '../ttfp/report/stepTraces.ts';
import { clipPieces, type ClipPieces } from './burstSteps.ts';

type Arm = 'async' | 'sync' | 'text' | 'alone';

/**
 * The config as the burst runs it: admission's bounds off (the seed's burst is all admitted; a 429 is no TTFT), and
 * with `sync` the Thinker's engine.sync_encoding set.
 */
function burstConfig(text: string, sync: boolean): string {
  const doc = parseDocument(text);
  doc.setIn(['admission', 'slo_ttfp_ms'], null);
  doc.setIn(['admission', 'max_queue_ms'], null);
  const stages = (doc.toJS() as { stages: { kind: string }[] }).stages;
  if (sync) doc.setIn(['stages', stages.findIndex((s) => s.kind === 'thinker'), 'engine', 'sync_encoding'], true);
  return doc.toString();
}

/**
 * Each arm's prompts are its own, and every text's differs from its first tokens: the arms of a round run on one
 * server, and when the text arm's prompts were the async arm's, each of its texts adopted 48 of its 54 positions
 * from its twin's KV in the prefix cache (its steps prefilled 6-7 positions a text against the async arm's 38-54:
 * bench/NOTES.md), so the figure compared a cached burst with an uncached one. Now no text of any arm shares a
 * prefix-cache block with another request (the index comes before the 16th token), whatever the arrival order.
 */
const ARM_TAG: Readonly<Record<Arm, string>> = { async: 'A', sync: 'S', text: 'T', alone: 'L' };

function textQuestion(arm: Arm, round: number, i: number) {
  const content = `${i} of burst ${round}${ARM_TAG[arm]}, a question: name a colour and a city you like.`;
  return { max_tokens: 2, messages: [{ role: 'user', content }] };
}

interface BurstResult {
  readonly arm: Arm;
  /** null: a text burst, or the clip request failed. */
  readonly clipTtftMs: number | null;
  readonly textTtftP50Ms: number | null;
  readonly failed: number;
  /** CPU ms each process used in the burst: main (with the clients), its decoder children, each stage process. */
  readonly cpuMs: Readonly<Record<string, number>>;
  /** Monotonic ms: the clip request's send, the texts' send, the burst's end (burstSteps.ts reads traces by them). */
  readonly window: readonly [sentAt: number, textsAt: number, endAt: number];
  /** --steps: the clip's chain piece by piece, ms from its send. */
  pieces?: ClipPieces;
}

/** Main's name in the CPU figures: the bench's process, which runs main and the clients. */
const MAIN = 'main+clients';

/** CPU ms of main's clip decoders that have ended: this process's children's children (the decoder spawner's). */
function childrenCpuMs(): number {
  const stats = readFileSync(`/proc/self/task/${process.pid}/children`, 'utf8').split(' ').filter(Boolean);
  return stats.reduce((ms, pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); // a child gone: the run failed
    return ms + ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS_PER_SECOND; // cutime + cstime
  }, 0);
}

/** CPU ms by process over `run`: every local stage process, this process (main and the clients), its children. */
async function cpuOver<T>(
  baseUrl: string,
  run: () => Promise<T>,
): Promise<{ value: T; cpuMs: Record<string, number> }> {
  const target = { baseUrl, apiKey: null };
  const [before, children] = [await cpuSnapshot(target), childrenCpuMs()];
  const value = await run();
  const cpu = new Map<string, number>();
  addCpuBetween(cpu, before, await cpuSnapshot(target));
  cpu.set('decoders', childrenCpuMs() - children);
  const named = [...cpu].map(([k, v]) => [k === BENCH_PROCESS ? MAIN : k, Math.round(v)] as const);
  return { value, cpuMs: Object.fromEntries(named) };
}

/**
 * Resolves once main sends media to an encoder (the clip request admitted, its encode planned) or `give` settles: told
 * by chorus:encoder:media, which main publishes in this process. It replaced a poll of /metrics every 10 ms that took
 * main's loop while the clip's request was in it (the clip alone: main+clients 136 -> 57 ms of CPU, bench/NOTES.md).
 */
function mediaSent(give: Promise<unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => (unsubscribe(channelNames.encoderMedia, done), resolve());
    subscribe(channelNames.encoderMedia, done);
    void give.finally(done);
  });
}

/**
 * One burst. `together`: the 31 texts are sent once the clip request is admitted (its decode in main done, its encode
 * planned), so all 32 reach the engine at once, as in seed 000 (whose clip came as frames, with no decode); else all
 * 32 are sent at once and the clip's decode in main overlaps the texts.
 */
async function burst(
  baseUrl: string,
  arm: Arm,
  round: number,
  requests: number,
  clip: Buffer,
  together: boolean,
): Promise<BurstResult> {
  const bodies = Array.from({ length: arm === 'alone' ? 1 : requests }, (_, i) =>
    i === 0 && arm !== 'text'
      ? videoQuestion(clip, `Burst ${round}${ARM_TAG[arm]}: what happens in this clip?`, { textFirst: true })
      : textQuestion(arm, round, i),
  );
  // A request that fails (a first-chunk deadline passed while the Thinker stalled) counts as failed, not as a time.
  const send = (b: unknown) =>
    streamedTtft(baseUrl, b).then(
      (t) => t.ttftMs,
      (err: Error) => err,
    );
  const sentAt = monotonicMs();
  let textsAt = sentAt;
  const { value: ttfts, cpuMs } = await cpuOver(baseUrl, async () => {
    const first = send(bodies[0]);
    if (together && arm !== 'text') await mediaSent(first);
    textsAt = monotonicMs();
    return Promise.all([first, ...bodies.slice(1).map(send)]);
  });
  const window = [sentAt, textsAt, monotonicMs()] as const;
  const failed = ttfts.filter((t) => t instanceof Error);
  if (failed.length > 0) console.error(`${arm}: ${failed.length} failed, e.g. ${failed[0].message.slice(0, 200)}`);
  const ms = (t: number | Error) => (t instanceof Error ? null : Math.round(t));
  const texts = ttfts.slice(1).flatMap((t) => (t instanceof Error ? [] : [t]));
  return {
    arm,
    clipTtftMs: arm === 'text' ? null : ms(ttfts[0]),
    textTtftP50Ms: texts.length > 0 ? Math.round(median(texts)) : null,
    failed: failed.length,
    cpuMs,
    window,
  };
}

/** Each piece's median over an arm's bursts (burstSteps.ts): where the clip's time went, whatever the round. */
function medianPieces(results: readonly BurstResult[]): Record<string, number> | null {
  const all = results.flatMap((r) => (r.pieces ? [r.pieces] : []));
  if (all.length === 0) return null;
  const m = (f: (p: ClipPieces) => number | null | undefined) =>
    median(all.flatMap((p) => (typeof f(p) === 'number' ? [f(p)!] : [])));
  const last = (p: ClipPieces) => p.clipSteps.at(-1);
  return {
    atEncoder: m((p) => p.atEncoder),
    mediaIn: m((p) => p.mediaIn),
    encodeStart: m((p) => p.encode?.[0]),
    encodeMs: m((p) => p.encode?.[1]),
    rowsIn: m((p) => p.rowsIn),
    rowsLastIn: m((p) => p.rowsLastIn),
    clipFirstStep: m((p) => p.clipSteps[0]?.[0]),
    clipLastStepEnd: m((p) => (last(p) ? last(p)![0] + last(p)![1] : null)),
    clipStepsMs: m((p) => p.clipSteps.reduce((ms, s) => ms + s[1], 0)),
    textsBefore: m((p) => p.textsBefore),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: 'string', default: 'configs/tiny-omni.yaml' },
      rounds: { type: 'string', default: '3' },
      requests: { type: 'string', default: '32' },
      together: { type: 'boolean', default: false },
      steps: { type: 'boolean', default: false },
    },
  });
  const [rounds, requests] = [Number(values.rounds), Number(values.requests)];
  const log = benchLogger(process.stderr);
  const config = await readBenchConfig(values.config);
  // Per round one clip for async and sync (each on its own server), another for alone (on async's: no cache hit).
  const clips = await Promise.all(Array.from({ length: 2 * rounds + 1 }, (_, r) => benchClip(15, 15 + 17 * r)));
  const clipOf = (arm: Arm, r: number) => clips[arm === 'alone' ? rounds + 1 + r : r];
  const loadAtStart = loadavg()[0];
  const results: BurstResult[] = [];
  const runArms = async (text: string, arms: readonly Arm[]) => {
    // The stage processes inherit the variable: each writes its steps there (src/worker/StepTrace.ts).
    const stepsDir = values.steps ? mkdtempSync(path.join(tmpdir(), 'chorus-burst-steps-')) : null;
    if (stepsDir) process.env[STEP_TRACE_ENV] = stepsDir;
    const server = await startInProcessServer(parseConfig(text, config.file), log);
    try {
      await burst(server.baseUrl, arms[0], -1, 4, clips[rounds], false); // warm up: first spawns out of the figure
      for (let r = 0; r < rounds; r++) {
        for (const arm of arms) {
          const result = await burst(server.baseUrl, arm, r, requests, clipOf(arm, r), values.together);
          if (stepsDir && arm !== 'text')
            result.pieces = clipPieces(await readProcessTraces(stepsDir), ...result.window);
          results.push(result);
          console.error(JSON.stringify({ round: r, ...result }));
        }
      }
    } finally {
      await server.close();
      if (stepsDir) rmSync(stepsDir, { recursive: true, force: true });
      delete process.env[STEP_TRACE_ENV];
    }
  };
  await runArms(burstConfig(config.text, false), ['async', 'text', 'alone']);
  await runArms(burstConfig(config.text, true), ['sync']);
  const of = (arm: Arm) => results.filter((r) => r.arm === arm);
  const known = (xs: readonly (number | null)[]) => xs.filter((x): x is number => x !== null);
  const clipP50 = (arm: Arm) => median(known(of(arm).map((r) => r.clipTtftMs)));
  const textP50 = (arm: Arm) => median(known(of(arm).map((r) => r.textTtftP50Ms)));
  const failed = (arm: Arm) => of(arm).reduce((n, r) => n + r.failed, 0);
  const cpuP50 = (arm: Arm) => {
    const names = [...new Set(of(arm).flatMap((r) => Object.keys(r.cpuMs)))];
    return Object.fromEntries(names.map((n) => [n, median(of(arm).map((r) => r.cpuMs[n] ?? 0))]));
  };
  const summary = {
    gitSha: gitSha(),
    config: values.config,
    requests,
    rounds,
    together: values.together,
    clip: '15 s 320x240 H.264 at fps 2: 30 frames, 810 rows',
    load: { start: Number(loadAtStart.toFixed(1)), end: Number(loadavg()[0].toFixed(1)) },
    clipTtftMs: { async: clipP50('async'), sync: clipP50('sync'), alone: clipP50('alone') },
    clipAsyncOverSync: Number((clipP50('async') / clipP50('sync')).toFixed(3)),
    /** The clip alone over sync: what async / sync would be if the 31 texts cost the clip nothing at all. */
    clipAloneOverSync: Number((clipP50('alone') / clipP50('sync')).toFixed(3)),
    textTtftP50Ms: { withClip: textP50('async'), withoutClip: textP50('text'), sync: textP50('sync') },
    textWithOverWithout: Number((textP50('async') / textP50('text')).toFixed(3)),
    failedRequests: { async: failed('async'), sync: failed('sync'), text: failed('text'), alone: failed('alone') },
    /** Median CPU ms per burst by process, per arm. */
    cpuMsPerBurst: { async: cpuP50('async'), sync: cpuP50('sync'), text: cpuP50('text'), alone: cpuP50('alone') },
    /** --steps: the clip's chain, median ms from its send per piece (burstSteps.ts). */
    clipPiecesMs: values.steps
      ? { async: medianPieces(of('async')), sync: medianPieces(of('sync')), alone: medianPieces(of('alone')) }
      : undefined,
    goals: 'clip async <= 0.5x sync; text p50 with the clip <= 1.2x without',
    bursts: results,
  };
  console.log(JSON.stringify(summary, null, 2));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
