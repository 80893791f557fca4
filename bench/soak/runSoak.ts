/**
 * `chorus soak`: N Realtime sessions for D seconds against `chorus serve` started as a child process, every answer
 * compared with a reference (the same seeded, greedy question asked alone first: text identical, audio within one
 * pcm16 step), with chaos on demand: an abort storm, a stage SIGKILLed or SIGSTOPped at a given second, malformed
 * Realtime frames and HTTP bodies. Reports answers, mismatches, failures by code, TTFP, RSS per process over time
 * (main is the server's process: the answers this soak keeps for its checks are not counted), and whatever
 * processes or shared memory outlived the server.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Prng, repoRoot } from '../../src/basics.ts';
import { RssByTurn, rssSpan } from './processRss.ts';
import { ServerProcess, type SoakMigrations } from './ServerProcess.ts';
import { SoakSession, type SoakAnswer } from './SoakSession.ts';

export interface ChaosAt {
  readonly stageId: string;
  readonly atSeconds: number;
}

/** What both soaks take: the server's config, the sessions, their answers' length and their seed. */
export interface SoakBaseOptions {
  readonly config: string;
  readonly sessions: number;
  readonly maxTokens: number;
  readonly seed: number;
}

export interface SoakOptions extends SoakBaseOptions {
  readonly seconds: number;
  readonly abortStorm: boolean;
  readonly killStage: readonly ChaosAt[];
  readonly stopStage: readonly ChaosAt[];
  readonly fuzz: boolean;
}

export interface SoakReport {
  readonly options: SoakOptions;
  readonly answers: number;
  /** Completed answers that differ from the reference (text, or audio by more than one pcm16 step). */
  readonly mismatches: readonly { prompt: number; why: string }[];
  /** How answers that did not complete ended: cancelled (the abort storm) and error codes (the chaos). */
  readonly endings: Readonly<Record<string, number>>;
  readonly ttfpMs: { readonly p50: number | null; readonly p99: number | null };
  /** Fuzz: what each malformed frame or body got back (event type / HTTP status -> count). */
  readonly fuzz: Readonly<Record<string, number>>;
  /** Resident memory (MiB) of main (the server) and each stage instance: at the start, the end and the highest. */
  readonly rssMiB: Readonly<Record<string, { start: number; end: number; max: number }>>;
  readonly leftover: { readonly processes: readonly number[]; readonly segments: readonly string[] };
  /** Requests the chaos took an instance from: migrated (the client saw a pause), refused or failed (an ending). */
  readonly migrations: SoakMigrations;
}

const PROMPTS = [
  'Tell me about the sea.',
  'What is the weather like today?',
  'Describe a ship in a storm.',
  'Sing me a short song.',
];
const FUZZ_DIR = join(repoRoot(), 'test', 'fixtures', 'fuzz'); // from the sources and from dist/ alike

export async function runSoak(o: SoakOptions, onProgress: (line: string) => void = () => {}): Promise<SoakReport> {
  // Drain as the in-process soak did: 5 s for the answers still running at the end, then they are cancelled.
  // Sessions: its own, the fuzz's and the references' (closing as the others open) beside the server's 64: a 64-session
  // soak (issue 30's goal) was refused 429 at its 64th handshake.
  const serveArgs = ['--max-running-requests', String(4 * o.sessions), '--drain-timeout', '5'];
  serveArgs.push('--max-sessions', String(Math.max(64, o.sessions + 2)));
  const server = await ServerProcess.start(o.config, serveArgs);
  const url = server.url;
  // RSS of main and of each stage instance over the run; a restarted instance continues its line.
  const rss = new RssByTurn();
  const seenPids = new Set<number>();
  let samples = 0;
  const sample = () =>
    server.processes().then((processes) => {
      rss.sample(samples++, processes);
      for (const p of processes) if (p.name !== 'main') seenPids.add(p.pid);
    });
  try {
    await sample();
    // References: each question asked alone, before any load or chaos.
    const reference = await SoakSession.open(url);
    const references: SoakAnswer[] = [];
    for (let p = 0; p < PROMPTS.length; p++) references.push(await reference.ask(p, PROMPTS[p], o.maxTokens, false));
    reference.close();
    onProgress(`references ready; ${o.sessions} sessions for ${o.seconds} s`);

    const rng = new Prng(o.seed);
    const sessions = await Promise.all(Array.from({ length: o.sessions }, () => SoakSession.open(url)));
    const runs = sessions.map((s, i) => s.run(PROMPTS, i, o.maxTokens, o.abortStorm ? 0.25 : 0, () => rng.nextFloat()));
    const timers = [
      ...o.killStage.map((c) => setTimeout(() => void signalStage(server, c.stageId, 'SIGKILL'), 1000 * c.atSeconds)),
      ...o.stopStage.map((c) => setTimeout(() => void signalStage(server, c.stageId, 'SIGSTOP'), 1000 * c.atSeconds)),
    ];
    const fuzz: Record<string, number> = {};
    const fuzzing = o.fuzz ? runFuzz(url, o.seconds, fuzz) : Promise.resolve();
    // Samples chain: one read of /health and /proc at a time, however slow the server is to answer.
    let sampling = Promise.resolve();
    const ticker = setInterval(() => (sampling = sampling.then(sample, () => undefined)), 500);
    await new Promise((resolve) => setTimeout(resolve, 1000 * o.seconds));
    for (const s of sessions) s.stop();
    await Promise.all([...runs, fuzzing]);
    clearInterval(ticker);
    for (const t of timers) clearTimeout(t);
    await sampling.catch(() => undefined);
    await sample();
    for (const s of sessions) s.close();

    const answers = sessions.flatMap((s) => s.answers);
    const mismatches: { prompt: number; why: string }[] = [];
    const endings: Record<string, number> = {};
    for (const a of answers) {
      if (a.status !== 'incomplete' && a.status !== 'completed') {
        const key = a.status === 'failed' ? (a.code ?? 'failed') : a.status;
        endings[key] = (endings[key] ?? 0) + 1;
        continue;
      }
      const why = compare(a, references[a.prompt]);
      if (why) mismatches.push({ prompt: a.prompt, why });
    }
    const ttfps = answers.flatMap((a) => (a.ttfpMs === null ? [] : [a.ttfpMs])).sort((x, y) => x - y);
    const pct = (q: number) =>
      ttfps.length === 0 ? null : ttfps[Math.min(ttfps.length - 1, Math.floor(q * ttfps.length))];
    const migrations = await server.migrations();
    await server.stop();
    return {
      options: o,
      answers: answers.length,
      mismatches,
      endings,
      ttfpMs: { p50: pct(0.5), p99: pct(0.99) },
      fuzz,
      rssMiB: rssSpan(rss.series()),
      migrations,
      leftover: server.leftover(seenPids),
    };
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  }
}

/** Why an answer differs from its reference, or null: text identical, audio within one pcm16 step. */
function compare(a: SoakAnswer, ref: SoakAnswer): string | null {
  if (a.transcript !== ref.transcript) return `transcript ${JSON.stringify(a.transcript)} != reference`;
  if (a.audio.length !== ref.audio.length) return `audio of ${a.audio.length} bytes, reference ${ref.audio.length}`;
  for (let i = 0; i + 1 < a.audio.length; i += 2) {
    if (Math.abs(a.audio.readInt16LE(i) - ref.audio.readInt16LE(i)) > 1) return `audio differs at sample ${i / 2}`;
  }
  return null;
}

/** Signals replica 0 of a stage, found by name in the server's /health. */
async function signalStage(server: ServerProcess, stageId: string, signal: NodeJS.Signals): Promise<void> {
  const stage = (await server.processes()).find((p) => p.name === `${stageId}#0`);
  if (stage) process.kill(stage.pid, signal);
}

/** Every second: one malformed Realtime frame on a session of its own, and one malformed chat body. */
async function runFuzz(url: string, seconds: number, out: Record<string, number>): Promise<void> {
  const frames = readFileSync(join(FUZZ_DIR, 'realtime.txt'), 'utf8').split('\n').filter(Boolean);
  const bodies = readFileSync(join(FUZZ_DIR, 'http.txt'), 'utf8').split('\n').filter(Boolean);
  const session = await SoakSession.open(url);
  const count = (key: string) => (out[key] = (out[key] ?? 0) + 1);
  const until = performance.now() + 1000 * seconds;
  for (let i = 0; performance.now() < until; i++) {
    count(`ws ${await session.sendRaw(frames[i % frames.length])}`);
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bodies[i % bodies.length],
    });
    count(`http ${res.status}`);
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  session.close();
}
