/**
 * `chorus bench --voice`: spoken turns against typed ones. At each concurrency, sessions speak sentences (espeak-ng
 * WAVs made once per run in a temp folder, removed at the end) at real-time pace with server VAD, each answered
 * automatically at speech_stopped; then the same sentences are typed, at the same concurrency. The clients run in a
 * process of their own (VoiceClients), so a server the bench hosts (--config) is measured without them on its loop.
 * Afterwards, with the machine to itself, the bench times what a voice turn adds alone on the runners (encode of
 * the utterance, prefill of its rows): where the time goes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Logger } from '../../src/index.ts';
import { ChorusError, COMMIT_TAIL_MS, ErrorCodes } from '../../src/basics.ts';
import { gitSha } from '../common.ts';
import { readBenchConfig, startInProcessServer, type BenchConfig } from '../ttfp/inProcessServer.ts';
import { ProgressBar } from '../ttfp/ProgressBar.ts';
import { finished, machineInfo } from '../ttfp/results.ts';
import { ServerTimings } from '../ttfp/ServerTimings.ts';
import { measureBreakdown } from './measureBreakdown.ts';
import type { TurnKind, TurnSettings, TurnSpec, TurnTrace } from './protocol.ts';
import { voicePrompts } from './sentences.ts';
import { concatPcm, quiet, SPEECH_RATE_HZ, speakToFile } from './speech.ts';
import { speechOf, withLead } from './turns.ts';
import { VoiceClients } from './VoiceClients.ts';
import { evaluateVoiceGoal, summarizeVoiceRun, type VoiceBenchResult } from './voiceResults.ts';

export type VoiceBenchTarget =
  | { readonly kind: 'config'; readonly file: string }
  | { readonly kind: 'url'; readonly url: string; readonly apiKey: string | null };

export interface VoiceBenchOptions {
  readonly target: VoiceBenchTarget;
  readonly concurrency: readonly number[];
  readonly numPrompts: number;
  readonly outputLen: number;
  /** turn_detection.silence_duration_ms (default 500, OpenAI's). */
  readonly silenceMs: number;
  readonly warmup: number;
  readonly seed: number;
  /** Per turn, from the end of speech (or the typed send) to response.done. */
  readonly timeoutMs: number;
  /** Time encode and prefill alone after the runs (--config only; default true). */
  readonly breakdown?: boolean;
  readonly breakdownRepeats?: number;
  readonly progress: (NodeJS.WritableStream & { isTTY?: boolean }) | null;
  readonly log: Logger;
  readonly command: string;
  /** Called with every turn's trace (the CLI writes them to DIR/requests.json). */
  readonly onRun?: (concurrency: number, traces: readonly TurnTrace[]) => void;
}

export async function runVoiceBench(o: VoiceBenchOptions): Promise<VoiceBenchResult> {
  const config = o.target.kind === 'config' ? await readVoiceConfig(o.target.file) : null;
  const result: VoiceBenchResult = {
    tool: 'chorus bench --voice',
    started_at: new Date().toISOString(),
    finished_at: '',
    command: o.command,
    git_sha: gitSha(),
    machine: machineInfo(),
    target: o.target.kind === 'config' ? { kind: 'config', file: o.target.file } : { kind: 'url', url: o.target.url },
    config_sha256: config?.sha256 ?? null,
    options: {
      concurrency: o.concurrency,
      num_prompts: o.numPrompts,
      output_len: o.outputLen,
      silence_duration_ms: o.silenceMs,
      warmup: o.warmup,
      seed: o.seed,
    },
    runs: [],
    breakdown: null,
    goals: [],
    goal_note: null,
  };
  const speechDir = mkdtempSync(path.join(os.tmpdir(), 'chorus-voice-bench-'));
  try {
    const prompts = voicePrompts(o.numPrompts);
    const warmups = voicePrompts(o.warmup, o.numPrompts);
    const wavOf = new Map<string, string>();
    for (const text of new Set([...prompts, ...warmups])) {
      const file = path.join(speechDir, `${wavOf.size}.wav`);
      speakToFile(text, file);
      wavOf.set(text, file);
    }
    let noiseSeeds = 0;
    const turnsOf = (texts: readonly string[]): TurnSpec[] =>
      texts.map((text, index) => ({
        index,
        seed: o.seed + index,
        text,
        wavFile: wavOf.get(text)!,
        noiseSeed: 2 * ++noiseSeeds, // the room noise after the speech takes noiseSeed + 1
      }));
    const committed = await measureRuns(o, config, result, turnsOf, prompts, warmups);
    if (config && o.breakdown !== false) {
      const run = [...result.runs].sort((a, b) => a.concurrency - b.concurrency)[0];
      if (run && run.voice_completed > 0 && run.text_completed > 0) {
        o.log.info('timing encode and prefill alone');
        result.breakdown = await measureBreakdown({
          graph: config.graph,
          run,
          silenceMs: o.silenceMs,
          committed,
          repeats: o.breakdownRepeats ?? 20,
          seed: o.seed,
        });
      }
    }
  } finally {
    rmSync(speechDir, { recursive: true, force: true });
  }
  const { goals, note } = evaluateVoiceGoal(result);
  result.goals = goals;
  result.goal_note = note;
  return finished(result);
}

async function readVoiceConfig(file: string): Promise<BenchConfig> {
  const config = await readBenchConfig(file);
  if (!config.graph.stages.some((s) => s.kind === 'encoder' && s.encoder?.modality === 'audio'))
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `--voice needs a pipeline with an audio encoder, and ${file} has none: use configs/tiny-omni.yaml`,
    );
  return config;
}

type Load = (name: string, kind: TurnKind, concurrency: number, turns: TurnSpec[]) => ReturnType<VoiceClients['run']>;

/**
 * Starts the server (--config) and the client process, runs warm-up and every concurrency (voice, then text), and
 * stops both whatever happens. Returns the lowest concurrency's utterances as committed, for the breakdown.
 */
async function measureRuns(
  o: VoiceBenchOptions,
  config: BenchConfig | null,
  result: VoiceBenchResult,
  turnsOf: (texts: readonly string[]) => TurnSpec[],
  prompts: readonly string[],
  warmups: readonly string[],
): Promise<Int16Array[]> {
  const timings = config ? new ServerTimings() : null;
  let server: Awaited<ReturnType<typeof startInProcessServer>> | null = null;
  let clients: VoiceClients | null = null;
  try {
    clients = await VoiceClients.start();
    if (config) server = await startInProcessServer(config.graph, o.log);
    const settings: TurnSettings = {
      baseUrl: server?.baseUrl ?? (o.target as Extract<VoiceBenchTarget, { kind: 'url' }>).url,
      apiKey: o.target.kind === 'url' ? o.target.apiKey : null,
      silenceMs: o.silenceMs,
      outputLen: o.outputLen,
      timeoutMs: o.timeoutMs,
    };
    const load: Load = (name, kind, concurrency, turns) => {
      const bar = o.progress ? new ProgressBar(o.progress, name, turns.length) : null;
      return clients!
        .run(kind, concurrency, settings, turns, (ok) => bar?.tick(ok))
        .finally(() => bar?.finish());
    };
    if (warmups.length > 0) await warmUp(o, load, () => turnsOf(warmups));
    let committed: Int16Array[] = [];
    for (const concurrency of [...o.concurrency].sort((a, b) => a - b)) {
      const voiceTurns = turnsOf(prompts);
      // The bench's own server (--config) runs on this thread: its event-loop delay while the sessions talk.
      const loop = server ? monitorEventLoopDelay({ resolution: 5 }) : null;
      loop?.enable();
      const voice = await load(`voice c=${concurrency}`, 'voice', concurrency, voiceTurns);
      loop?.disable();
      const text = await load(`text c=${concurrency}`, 'text', concurrency, turnsOf(prompts));
      const serverTiming = timings ? { serverTiming: (id: string | undefined) => timings.get(id) } : {};
      const eventLoopDelayP99Ms = loop ? loop.percentile(99) / 1e6 : null;
      result.runs.push(
        summarizeVoiceRun({ concurrency, silenceMs: o.silenceMs, voice, text, ...serverTiming, eventLoopDelayP99Ms }),
      );
      o.onRun?.(concurrency, [...voice.traces, ...text.traces]);
      if (committed.length === 0) committed = committedClips(voiceTurns, voice.traces);
    }
    return committed;
  } finally {
    try {
      await clients?.close();
    } finally {
      try {
        await server?.close();
      } finally {
        timings?.close();
      }
    }
  }
}

/** Warm-up turns, out of the figures; they also start the server's VAD service (it loads on the first session). */
async function warmUp(o: VoiceBenchOptions, load: Load, turns: () => TurnSpec[]): Promise<void> {
  for (const kind of ['voice', 'text'] as const) {
    const failed = (await load(`${kind} warm-up`, kind, 1, turns())).traces.find((t) => !t.ok);
    if (failed)
      throw new ChorusError(
        ErrorCodes.STAGE_FAILED,
        `a ${kind} warm-up turn failed (${failed.error}); is the server healthy?`,
      );
  }
}

/**
 * What the server committed of each completed voice turn: the speech with its room noise, up to COMMIT_TAIL_MS past
 * the VAD's audio_end_ms (the item keeps that much of the silence; the rest is dropped).
 */
function committedClips(turns: readonly TurnSpec[], traces: readonly TurnTrace[]): Int16Array[] {
  return traces.flatMap((t, i) => {
    if (!t.ok || t.vadAudioEndMs === undefined) return [];
    const spoken = withLead(speechOf(turns[i].wavFile), turns[i].noiseSeed);
    const clipSamples = Math.round(((t.vadAudioEndMs + COMMIT_TAIL_MS) * SPEECH_RATE_HZ) / 1000);
    const room = quiet(Math.max(0, ((clipSamples - spoken.length) * 1000) / SPEECH_RATE_HZ), turns[i].noiseSeed + 1);
    return [concatPcm(spoken, room).subarray(0, clipSamples)];
  });
}
