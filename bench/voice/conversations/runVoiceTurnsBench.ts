/**
 * `chorus bench --voice --turns N`: spoken conversations. At each concurrency, sessions speak N different sentences
 * each (espeak-ng WAVs made once per run in a temp folder, removed at the end) at real-time pace with server VAD,
 * one turn after the answer to the last (SpokenConversation.ts), so each answer's prompt is the whole conversation
 * so far; per turn index, the time from the end of speech to the first audio and the cached share of the input.
 * With two servers (--compare-prefix-cache, --compare-config) both run at once and each concurrency's
 * conversations go in halves A B B A, as in `bench --turns`.
 *
 * The clients run in the voice bench's client process (VoiceClients), so a server the bench hosts is measured
 * without them on its event loop. No critical-path limit or breakdown is measured: the single-turn ones say nothing
 * of a turn over a long history.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../../src/index.ts';
import { ChorusError, ErrorCodes } from '../../../src/basics.ts';
import { interleaves, openMode, overModes, sortRuns, type LiveMode, type Mode } from '../../ttfp/modeRun.ts';
import { ProgressBar } from '../../ttfp/ProgressBar.ts';
import { finished, resultHeader } from '../../ttfp/results.ts';
import { planModes } from '../../ttfp/planModes.ts';
import type { BenchTarget } from '../../ttfp/serveBenchOptions.ts';
import type { TurnSettings, TurnSpec, TurnTrace } from '../protocol.ts';
import { speakToFile } from '../speech.ts';
import { VoiceClients } from '../VoiceClients.ts';
import { spokenConversations } from './spokenConversations.ts';
import {
  summarizeVoiceTurnsRun,
  voiceTurnsGoals,
  voiceTurnsRatios,
  type VoiceTurnsResult,
  type VoiceTurnsRun,
} from './voiceTurnsResult.ts';

export interface VoiceTurnsBenchOptions {
  readonly target: BenchTarget;
  /** The config as it is ("cache") against every stage's engine.prefix_cache off ("no-cache"). */
  readonly comparePrefixCache: boolean;
  /** A second config (--config only); ratios are --config over it. */
  readonly compareConfig?: string;
  readonly concurrency: readonly number[];
  /** Turns per conversation. */
  readonly turns: number;
  /** Conversations per concurrency; default twice the concurrency (each half of A B B A keeps it in flight). */
  readonly conversations?: number;
  readonly outputLen: number;
  /** turn_detection.silence_duration_ms. */
  readonly silenceMs: number;
  /** Single spoken turns per server before anything is measured (they also start its VAD). */
  readonly warmup: number;
  readonly seed: number;
  /** Per turn, from the end of speech to response.done. */
  readonly timeoutMs: number;
  readonly progress: (NodeJS.WritableStream & { isTTY?: boolean }) | null;
  readonly log: Logger;
  readonly command: string;
  /** Called after each run with its row, its traces and what was spoken ([conversation][turn] both). */
  readonly onRun?: (
    run: VoiceTurnsRun,
    traces: readonly (readonly TurnTrace[])[],
    spoken: readonly (readonly TurnSpec[])[],
  ) => void;
}

/** Conversations at the i-th concurrency are drawn from seed + (i + 1) * this (warm-up sentences: another stream). */
const CONVERSATION_SEED_STRIDE = 0x10001;

export async function runVoiceTurnsBench(o: VoiceTurnsBenchOptions): Promise<VoiceTurnsResult> {
  const modes = await planModes({ ...o, compareSync: false, compareScheduling: false });
  for (const m of modes) if (m.config) checkAudioIn(m);
  const result: VoiceTurnsResult = {
    tool: 'chorus bench --voice --turns',
    ...resultHeader(o, modes),
    options: {
      concurrency: o.concurrency,
      turns: o.turns,
      conversations: o.conversations ?? null,
      output_len: o.outputLen,
      silence_duration_ms: o.silenceMs,
      warmup: o.warmup,
      seed: o.seed,
      interleaved: interleaves(modes),
    },
    runs: [],
    ratios: [],
    goals: [],
  };
  const speechDir = mkdtempSync(path.join(os.tmpdir(), 'chorus-voice-turns-'));
  try {
    await measure(o, modes, result, new Speaker(speechDir));
  } finally {
    rmSync(speechDir, { recursive: true, force: true });
  }
  sortRuns(result.runs, modes, o.concurrency);
  if (modes.length === 2) result.ratios = voiceTurnsRatios(result.runs, modes[0].variant, modes[1].variant);
  result.goals = voiceTurnsGoals(result.runs);
  return finished(result);
}

function checkAudioIn(mode: Mode): void {
  const { graph, file } = mode.config!;
  if (!graph.stages.some((s) => s.kind === 'encoder' && s.encoder?.modality === 'audio'))
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `--voice needs a pipeline with an audio encoder, and ${file} has none: use configs/tiny-omni.yaml`,
    );
}

/**
 * The turns to speak: each sentence's espeak-ng WAV made once, and room noise seeded uniquely per turn over the
 * whole run, so no committed clip is the same bytes as another on one server and the audio encoder's cache never
 * answers a measured turn. (Both servers of a comparison hear the same clips: the same input for both.)
 */
class Speaker {
  readonly #wavOf = new Map<string, string>();
  #noiseSeeds = 0;

  constructor(private readonly dir: string) {}

  turns(sentences: readonly string[], seedOf: (t: number) => number): TurnSpec[] {
    return sentences.map((text, t) => ({
      index: t,
      seed: seedOf(t),
      text,
      wavFile: this.#wav(text),
      noiseSeed: 2 * ++this.#noiseSeeds, // the room noise after the speech takes noiseSeed + 1
    }));
  }

  #wav(text: string): string {
    let file = this.#wavOf.get(text);
    if (file === undefined) {
      file = path.join(this.dir, `${this.#wavOf.size}.wav`);
      speakToFile(text, file);
      this.#wavOf.set(text, file);
    }
    return file;
  }
}

/** Starts the clients and the servers, warms each server up, runs every concurrency, and stops all whatever happens. */
async function measure(
  o: VoiceTurnsBenchOptions,
  modes: readonly Mode[],
  result: VoiceTurnsResult,
  speaker: Speaker,
): Promise<void> {
  const warmupTurns = speaker.turns(spokenConversations(1, o.warmup, o.seed + 0x5eed)[0] ?? [], (t) => o.seed + t);
  // Each concurrency has conversations of its own (a server with a prefix cache must not answer c=4's turns from
  // what c=1's left in it); every server gets the same ones, made once.
  const spokenAt = o.concurrency.map((concurrency, index) =>
    spokenConversations(
      o.conversations ?? 2 * concurrency,
      o.turns,
      o.seed + (index + 1) * CONVERSATION_SEED_STRIDE,
    ).map((sentences, c) => speaker.turns(sentences, (t) => o.seed + c * o.turns + t)),
  );
  const clients = await VoiceClients.start();
  try {
    const open = async (mode: Mode): Promise<LiveMode> => {
      const live = await openMode({ ...o, protocol: 'realtime' }, mode, result);
      try {
        await warmUpSpoken(o, clients, settingsOf(o, live), warmupTurns, mode.variant);
      } catch (err) {
        await live.close();
        throw err;
      }
      return live;
    };
    await overModes(
      modes,
      o.concurrency,
      open,
      (index) => spokenAt[index].length,
      (live, concurrency, index) => {
        const run = new SpokenRun(o, clients, live, concurrency, spokenAt[index]);
        return { block: (from, to) => run.block(from, to), finish: () => run.finish(result) };
      },
    );
  } finally {
    await clients.close();
  }
}

function settingsOf(o: VoiceTurnsBenchOptions, live: LiveMode): TurnSettings {
  return { ...live.target, silenceMs: o.silenceMs, outputLen: o.outputLen, timeoutMs: o.timeoutMs };
}

/** Also starts the server's VAD service (it loads on the first server_vad session), outside the figures. */
async function warmUpSpoken(
  o: VoiceTurnsBenchOptions,
  clients: VoiceClients,
  settings: TurnSettings,
  turns: TurnSpec[],
  variant: string,
): Promise<void> {
  if (turns.length === 0) return;
  const bar = o.progress ? new ProgressBar(o.progress, `${variant} warm-up`, turns.length) : null;
  const w = await clients.run('voice', 1, settings, turns, (ok) => bar?.tick(ok)).finally(() => bar?.finish());
  const failed = w.traces.find((t) => !t.ok);
  if (failed)
    throw new ChorusError(
      ErrorCodes.STAGE_FAILED,
      `a spoken warm-up turn failed on ${variant} (${failed.error}); is the server healthy?`,
    );
}

/** One server's conversations at one concurrency, gathered over its blocks. */
class SpokenRun {
  readonly #traces: TurnTrace[][] = [];
  #durationMs = 0;
  #blocks = 0;

  constructor(
    private readonly o: VoiceTurnsBenchOptions,
    private readonly clients: VoiceClients,
    private readonly live: LiveMode,
    private readonly concurrency: number,
    private readonly all: TurnSpec[][],
  ) {}

  /** Conversations [from, to); conversation i keeps its seeds wherever it runs. */
  async block(from: number, to: number): Promise<void> {
    if (to <= from) return;
    const part = to - from < this.all.length ? ` [${from}, ${to})` : '';
    const label = `${this.live.mode.variant} c=${this.concurrency}${part}`;
    const bar = this.o.progress ? new ProgressBar(this.o.progress, label, (to - from) * this.o.turns) : null;
    const settings = settingsOf(this.o, this.live);
    const run = await this.clients
      .conversations(this.concurrency, settings, this.all.slice(from, to), (ok) => bar?.tick(ok))
      .finally(() => bar?.finish());
    run.traces.forEach((c, i) => (this.#traces[from + i] = [...c]));
    this.#durationMs += run.durationMs;
    this.#blocks++;
  }

  finish(result: VoiceTurnsResult): void {
    const run = summarizeVoiceTurnsRun({
      variant: this.live.mode.variant,
      concurrency: this.concurrency,
      turnsPerConversation: this.o.turns,
      traces: this.#traces,
      durationMs: this.#durationMs,
      blocks: this.#blocks,
    });
    result.runs.push(run);
    this.o.onRun?.(run, this.#traces, this.all);
  }
}
