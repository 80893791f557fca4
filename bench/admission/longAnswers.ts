/**
 * Long answers against newcomers (issue 41 goal): `--long` spoken answers of `--long-tokens` are sent at once to a
 * freshly started server (retried after their Retry-After while refused), and once every one has been speaking for
 * `--after-s` seconds, `--newcomers` short chats are sent one after another, each 0.5-1.5x `--gap-s` after the last
 * event (a seeded draw, `--seed`): a user arrives at any moment of the answers' audio cycle, not at one the bench
 * picks. When the long answers have ended, the
 * unloaded TTFP is measured on the idle server (the median of `--alone` short chats, after one to warm; seven:
 * with three, the reference moved 8.7-15.7 ms from run to run while the newcomers moved 11-20). Each
 * newcomer must hear its first audio within 2x that or be refused with 429 + Retry-After within 50 ms; no response
 * may be a 5xx or fail mid-stream. Beside the goal it prints the long answers' underruns (a player that starts at each
 * one's first audio, bench/ttfp/metrics.ts) and ends, and one long answer's end alone on the idle server (speech lead,
 * docs/scheduling.md, paces the sixteen to their speech; alone it must not). The long answers' clients run in a
 * process of their own, `--load-nice` levels below this one (bench/admission/longAnswersLoad.ts: clients on other
 * devices take no CPU from the server); the newcomers and the reference are this process's, after one chat of its
 * own to warm its client. A client of a running server only:
 *
 *   chorus serve --port 8000 &   # the shipped pipeline as is (bench/README.md)
 *   node --import tsx bench/admission/longAnswers.ts --url http://127.0.0.1:8000
 *
 * Prints one line per newcomer and a JSON summary; exits 1 when the goal is missed. */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { streamChat, type StreamedChat } from '../streamChat.ts';
import { median } from '../common.ts';
import { UsageError } from '../../src/basics.ts';
import { scriptFlags } from '../scriptFlags.ts';
import { seededRandom } from '../ttfp/prompts.ts';
import { simulatePlayer } from '../ttfp/metrics.ts';
import { longAnswer, type LoadCommand, type LoadReport, type LongAnswer } from './longAnswersLoad.ts';

const v = scriptFlags({
  url: 'http://127.0.0.1:8000',
  long: 16,
  'long-tokens': 800,
  newcomers: 3,
  'newcomer-tokens': 30,
  alone: 7,
  'after-s': 8,
  'gap-s': 2,
  'long-alone': 1,
  seed: 1,
  'load-nice': 19,
});
if (!Number.isInteger(v['load-nice']) || v['load-nice'] < 0 || v['load-nice'] > 19)
  throw new UsageError(`--load-nice must be a nice level 0-19 (below this process), got ${v['load-nice']}`);
const url = v.url.replace(/\/$/, '');
const REFUSAL_BOUND_MS = 50;
// Every short chat (newcomer, warm-up, unloaded reference) asks a question the server has not seen, its number first:
// the same prompt each time let the newcomers after the first, and every unloaded chat, start from the first
// newcomer's cached prefix block, so the first alone paid the prefill the reference never did (bench/NOTES.md).
let asked = 0;
const newcomerChat = () =>
  streamChat({ url, maxTokens: v['newcomer-tokens'], prompt: `${++asked} o'clock: what time is it?` });

async function main(): Promise<void> {
  const loadAtStart = loadavg()[0];
  // The client's own first chat runs its code cold (fetch, the stream's parse): a first newcomer from a process that
  // had sent nothing before came in 52-98 ms, the later ones in 10-38 (bench/NOTES.md, "Newcomers at the stop").
  await newcomerChat();
  const afterMs = v['after-s'] * 1000;
  const longCount = v.long;
  const load = startLoad({ url, count: longCount, tokens: v['long-tokens'], afterMs, nice: v['load-nice'] });
  try {
    await measure(load, loadAtStart);
  } finally {
    load.stop(); // ended already, unless this failed: its answers must not outlive the harness
  }
}

async function measure(load: ReturnType<typeof startLoad>, loadAtStart: number): Promise<void> {
  const longCount = v.long;
  await load.allSpeaking;
  const newcomers: StreamedChat[] = [];
  // Each newcomer waits a drawn share of the gap, the first too: sent straight from the audio callback that saw the
  // last answer reach --after-s, the first newcomer always arrived while the client, main and Code2Wav were handling
  // the sixteen answers' chunks, which come due together (they started together): 11 of 13 traced runs within
  // 22 ms of such a burst, the later newcomers in 0 of 26 (bench/NOTES.md, "The first newcomer: an audio burst").
  const random = seededRandom(v.seed);
  for (let i = 0; i < v.newcomers; i++) {
    await new Promise((resolve) => setTimeout(resolve, v['gap-s'] * (0.5 + random()) * 1000));
    const live = load.speakingNow();
    const n = await newcomerChat();
    newcomers.push(n);
    const what =
      n.status === 200
        ? `first audio ${ms(n.firstAudioMs)}`
        : `answered in ${ms(n.headersMs)}, Retry-After ${n.retryAfter}`;
    console.log(`newcomer ${i + 1} (sent with ${live} long answers speaking): ${n.status}, ${what}`);
    liveAtNewcomers.push(live);
  }
  const longAnswers = await load.done;
  const longDone = longAnswers.map((l) => l.chat);
  await newcomerChat(); // warm: the unloaded figure is the idle server's, not its first request's
  const alone: number[] = [];
  for (let i = 0; i < v.alone; i++) {
    const r = await newcomerChat();
    if (r.firstAudioMs === null) throw new Error(`an unloaded chat failed: status ${r.status} ${r.errors.join()}`);
    alone.push(r.firstAudioMs);
  }
  const unloadedTtfpMs = median(alone);
  const longAlone: number[] = [];
  for (let i = 0; i < v['long-alone']; i++)
    longAlone.push((await longAnswer(url, longCount + i, v['long-tokens'], Infinity)).chat.endMs);
  const all = [...newcomers, ...longDone];
  const stalls = longAnswers.map((l) => simulatePlayer(l.arrivals));
  const audioSeconds = longAnswers.map((l) => l.arrivals.reduce((n, c) => n + c.durationMs, 0) / 1000);
  const maxEnd = Math.max(...longDone.map((l) => l.endMs));
  const served = newcomers.filter((n) => n.status === 200 && n.errors.length === 0 && n.firstAudioMs !== null);
  const refused = newcomers.filter((n) => n.status === 429);
  const summary = {
    unloadedTtfpMs: round(unloadedTtfpMs),
    unloadedChatsMs: alone.map(round),
    newcomerTtfpRatio: served.map((n) => round(n.firstAudioMs! / unloadedTtfpMs)),
    refusalMs: refused.map((n) => round(n.headersMs)),
    refusalsWithRetryAfter: refused.filter((n) => n.retryAfter !== null).length,
    fiveXx: all.filter((r) => r.status >= 500).length,
    failedMidStream: all.filter((r) => r.errors.length > 0).map((r) => r.errors.join()),
    longCompleted: longDone.filter((l) => l.done && l.errors.length === 0).length,
    longUnderruns: stalls.reduce((n, st) => n + st.underruns, 0),
    longWithUnderruns: stalls.filter((st) => st.underruns > 0).length,
    longWorstStallMs: round(Math.max(0, ...stalls.map((st) => st.worstStallMs))),
    longEndS: { median: round(median(longDone.map((l) => l.endMs)) / 1000), max: round(maxEnd / 1000) },
    longAudioS: round(median(audioSeconds)),
    longAloneEndS: longAlone.map((ms) => round(ms / 1000)),
    longRetries: longAnswers.reduce((n, l) => n + l.retries, 0),
    longSpeakingAtNewcomers: liveAtNewcomers,
    load1m: { start: round(loadAtStart), end: round(loadavg()[0]) },
  };
  console.log(JSON.stringify(summary, null, 2));
  const met =
    summary.fiveXx === 0 &&
    summary.failedMidStream.length === 0 &&
    served.length + refused.length === newcomers.length &&
    served.every((n) => n.firstAudioMs! <= 2 * unloadedTtfpMs) &&
    refused.every((n) => n.retryAfter !== null && n.headersMs <= REFUSAL_BOUND_MS);
  console.log(met ? 'goal met' : 'goal missed');
  process.exitCode = met ? 0 : 1;
}

const liveAtNewcomers: number[] = [];

/**
 * The long answers from a process of their own (longAnswersLoad.ts): how many speak now, once every one has spoken
 * for afterMs (rejected if they end or the process fails first), and each one's end.
 */
function startLoad(cmd: LoadCommand): {
  speakingNow: () => number;
  allSpeaking: Promise<void>;
  done: Promise<readonly LongAnswer[]>;
  stop: () => void;
} {
  const child = fork(fileURLToPath(new URL('./longAnswersLoad.ts', import.meta.url)), [], {
    execArgv: process.execArgv,
  });
  let speaking = 0;
  let spoke: () => void = () => {};
  let fail: (err: Error) => void = () => {};
  const allSpeaking = new Promise<void>((resolve, reject) => ((spoke = resolve), (fail = reject)));
  const done = new Promise<readonly LongAnswer[]>((resolve, reject) => {
    child.on('message', (r: LoadReport) => {
      if ('speaking' in r) speaking = r.speaking;
      else if ('allSpeaking' in r) spoke();
      else if ('done' in r) {
        fail(new Error(`only some long answers spoke for --after-s before they ended: raise --long-tokens`));
        resolve(r.done);
      } else reject(new Error(`the long answers' process failed: ${r.error}`));
    });
    child.on('exit', (code) => reject(new Error(`the long answers' process exited (${code}) before they ended`)));
  });
  done.catch(fail);
  child.send(cmd);
  const stop = () => void (child.exitCode === null && child.signalCode === null && child.kill());
  return { speakingNow: () => speaking, allSpeaking, done, stop };
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

function ms(x: number | null): string {
  return x === null ? '-' : `${x.toFixed(0)} ms`;
}

await main();
