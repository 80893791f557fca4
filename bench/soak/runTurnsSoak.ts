/**
 * `chorus soak --turns N`: long Realtime conversations (N turns per session, text in, audio answers of a few tokens,
 * session.truncation "auto") against `chorus serve` started as a child process from --config, optionally with a
 * smaller Thinker so the conversations outgrow it early. Reports failed turns, the turns right after a truncation
 * against the turns before them, and the RSS of the server (main) and of every stage process, sampled after every
 * turn from /proc (issue 27: a 200-turn session, 0 failed, RSS within 10% of turn 20, TTFP after a truncation
 * <= 1.5x). The server runs in its own process so that main's RSS is the server's alone (issue 33 item 7).
 */
import os from 'node:os';
import { COMMON_WORDS } from '../../src/basics.ts';
import { gitSha, machineInfo, type Machine } from '../common.ts';
import { seededRandom } from '../ttfp/prompts.ts';
import { RssByTurn, type RssSample } from './processRss.ts';
import type { SoakBaseOptions } from './runSoak.ts';
import { ServerProcess } from './ServerProcess.ts';
import { SoakConversation, type SoakTurn } from './SoakConversation.ts';
import { thinkerPositionsConfig } from './thinkerPositionsConfig.ts';
import {
  failedTurns,
  rssFigures,
  lateTurnsFigures,
  truncationFigures,
  type LateTurnsFigures,
  type RssFigures,
  type TruncationFigures,
} from './turnsSoakReport.ts';

export interface TurnsSoakOptions extends SoakBaseOptions {
  readonly turns: number;
  /** The Thinker's max_positions in a temporary copy of the config; null: the config as it is. */
  readonly thinkerPositions: number | null;
  /** Words per user message (~1 token each with the generated tokenizers). */
  readonly inputWords: number;
  /** RSS at the end is compared with its value after this turn (issue 27: 20). */
  readonly rssBaselineTurn: number;
}

export interface TurnsSoakReport {
  readonly options: TurnsSoakOptions;
  readonly git_sha: string;
  /** With the load at the start and at the end (TTFP on a shared machine moves with it). */
  readonly machine: Machine;
  readonly durationS: number;
  readonly turns: number;
  readonly failed: readonly SoakTurn[];
  readonly truncation: TruncationFigures;
  /** The last third of the turns against the first ten (null: ten turns or fewer). */
  readonly lateTurns: LateTurnsFigures | null;
  /** Per process (main = the server; stage#replica): RSS after the baseline turn, at the end, and their ratio. */
  readonly rss: Readonly<Record<string, RssFigures>>;
  readonly rssSeries: Readonly<Record<string, readonly RssSample[]>>;
  /** Stage processes and shared memory of the server still there after it exited. */
  readonly leftover: { readonly processes: readonly number[]; readonly segments: readonly string[] };
  readonly serverExitCode: number | null;
  readonly perTurn: readonly SoakTurn[];
}

export async function runTurnsSoak(
  o: TurnsSoakOptions,
  onProgress: (line: string) => void = () => {},
): Promise<TurnsSoakReport> {
  const temp = o.thinkerPositions === null ? null : thinkerPositionsConfig(o.config, o.thinkerPositions);
  const startedMs = performance.now();
  const machine = machineInfo();
  try {
    const server = await ServerProcess.start(temp?.file ?? o.config);
    const rss = new RssByTurn();
    const stagePids = new Set<number>();
    const perTurn: SoakTurn[] = [];
    let serverExitCode: number | null = null;
    try {
      await converse(o, server, rss, stagePids, perTurn, onProgress);
    } finally {
      serverExitCode = await server.stop();
    }
    const truncation = truncationFigures(perTurn);
    return {
      options: o,
      git_sha: gitSha(),
      machine: { ...machine, load_avg_end: os.loadavg()[0] },
      durationS: Math.round((performance.now() - startedMs) / 100) / 10,
      turns: perTurn.length,
      failed: failedTurns(perTurn),
      truncation,
      lateTurns: lateTurnsFigures(perTurn),
      rss: rssFigures(rss.series(), o.rssBaselineTurn),
      rssSeries: rss.series(),
      leftover: server.leftover(stagePids),
      serverExitCode,
      perTurn,
    };
  } finally {
    temp?.remove();
  }
}

/**
 * The sessions' conversations, every turn into perTurn; RSS read once every session has finished turn k, one read
 * at a time (reads chain, never overlap).
 */
async function converse(
  o: TurnsSoakOptions,
  server: ServerProcess,
  rss: RssByTurn,
  stagePids: Set<number>,
  perTurn: SoakTurn[],
  onProgress: (line: string) => void,
): Promise<void> {
  let sampling = Promise.resolve();
  try {
    const sample = async (turn: number) => {
      const [processes, cacheMiB] = await Promise.all([server.processes(), server.prefixCacheMiB()]);
      for (const p of processes) if (p.name !== 'main') stagePids.add(p.pid);
      rss.sample(turn, processes, cacheMiB);
    };
    await sample(0);
    onProgress(`serving ${server.url} (pid ${server.pid}); ${o.sessions} session(s) of ${o.turns} turns`);
    const sessions = await Promise.all(
      Array.from({ length: o.sessions }, (_, i) => SoakConversation.open(server.url, i, o.maxTokens)),
    );
    const done = sessions.map(() => 0);
    let sampled = 0;
    const afterTurn = (t: SoakTurn) => {
      perTurn.push(t);
      done[t.session] = t.turn;
      for (let k = sampled + 1; k <= Math.min(...done); k++) sampling = sampling.then(() => sample(k));
      sampled = Math.min(...done);
      if (t.session === 0 && (t.turn % 10 === 0 || t.turn === o.turns)) {
        const failed = failedTurns(perTurn).length;
        const truncating = perTurn.filter((x) => x.deletedItems > 0).length;
        onProgress(`turn ${t.turn}/${o.turns}: ${failed} failed, ${truncating} truncating`);
      }
    };
    const random = seededRandom(o.seed);
    const messages = Array.from({ length: o.sessions }, () =>
      Array.from({ length: o.turns }, () => userMessage(random, o.inputWords)),
    );
    await Promise.all(
      sessions.map(async (s, i) => {
        for (const text of messages[i]) afterTurn(await s.turn(text));
        s.close();
      }),
    );
    await sampling;
  } finally {
    await sampling.catch(() => undefined); // a run that failed must still stop its server
  }
}

/**
 * The head of the word list: the generated models' byte tokenizer gives each of these one token (the tiny preset's
 * 512 ids hold ~250 words; later words are spelled in bytes, ~5 positions each), so a message of N words is ~N
 * positions and a conversation takes several turns to fill the Thinker.
 */
const ONE_TOKEN_WORDS = COMMON_WORDS.slice(0, 200);

/** A user message of `words` words, seeded: every turn adds new text to the conversation. */
function userMessage(random: () => number, words: number): string {
  const picked = Array.from({ length: words }, () => ONE_TOKEN_WORDS[Math.floor(random() * ONE_TOKEN_WORDS.length)]);
  return picked.join(' ');
}
