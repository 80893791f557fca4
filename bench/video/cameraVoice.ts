/**
 * Issue 44's camera goal: voice with the camera on (one frame a second) against the same turns with it off, end of
 * speech -> first audio (goal: on <= 1.3x off, p50). Both arms speak the same sentences as server_vad turns (each turn
 * a session of its own, bench/voice/turns.ts), the camera arm also sending
 * JPEG frames as input_image items (bench/voice/CameraFeed.ts: 320 x 240, every frame a new scene) from 2 s before the
 * speech until the answer ends, as the playground's camera button does. The arms alternate turn by turn (each sentence
 * off and on back to back), so a drift in the machine's load falls on both; `pairedOnOverOffP50` is the median of the
 * pairs' ratios. The clients run in a process of their own (the server is in this one).
 *
 *   npx tsx bench/video/cameraVoice.ts [--config configs/tiny-omni.yaml] [--turns 8] [--rounds 2] [--output-len 20]
 *                                      [--silence-ms 500] [--fps 1]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchLogger } from '../benchLogger.ts';
import { gitSha } from '../common.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { readBenchConfig, startInProcessServer } from '../ttfp/inProcessServer.ts';
import type { TurnSettings, TurnSpec, TurnTrace } from '../voice/protocol.ts';
import { voicePrompts } from '../voice/sentences.ts';
import { speakToFile } from '../voice/speech.ts';
import { VoiceClients } from '../voice/VoiceClients.ts';

const GOAL = 1.3;

/** The server's held-answer counters (chorus_voice_speculative_answers_total) by result, from /metrics. */
async function heldAnswers(baseUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^chorus_voice_speculative_answers_total\{result="(\w+)"\} (\d+)/gm))
    counts[m[1]] = Number(m[2]);
  return counts;
}

const percentile = (xs: readonly number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** End of speech -> the first audio delta; null for a failed turn. */
const ttfp = (t: TurnTrace) => {
  const audio = t.events.find((e) => e.type === 'audio')?.atMs;
  return t.ok && audio !== undefined ? audio - t.startMs : null;
};

type Arm = 'off' | 'on';

interface ArmFigures {
  readonly times: Record<Arm, number[]>;
  readonly held: Record<Arm, Record<string, number>>;
  failed: number;
}

/**
 * Warm-up (the VAD service, the first image encodes) out of the figures, then the arms alternately turn by turn (each
 * sentence spoken with the camera off and on back to back, which first alternating), so a drift in the machine's load
 * (8 sessions share it) falls on both arms of a pair: `paired` is each pair's on / off.
 */
async function measureArms(
  clients: VoiceClients,
  baseUrl: string,
  settings: Record<Arm, TurnSettings>,
  turns: () => TurnSpec[],
  rounds: number,
): Promise<ArmFigures & { readonly paired: number[] }> {
  await clients.run(1, settings.off, turns().slice(0, 1));
  await clients.run(1, settings.on, turns().slice(0, 1));
  const figures: ArmFigures = { times: { off: [], on: [] }, held: { off: {}, on: {} }, failed: 0 };
  const paired: number[] = [];
  const turn = async (arm: Arm, spec: TurnSpec): Promise<number | null> => {
    const before = await heldAnswers(baseUrl);
    const run = await clients.run(1, settings[arm], [spec]);
    const after = await heldAnswers(baseUrl);
    const held = figures.held[arm];
    for (const [k, v] of Object.entries(after)) held[k] = (held[k] ?? 0) + v - (before[k] ?? 0);
    const ms = ttfp(run.traces[0]);
    if (ms === null) figures.failed++;
    else figures.times[arm].push(ms);
    return ms;
  };
  for (let r = 0; r < rounds; r++) {
    for (const spec of turns()) {
      const order: Arm[] = (r + spec.index) % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      const ms: Partial<Record<Arm, number | null>> = {};
      for (const arm of order) ms[arm] = await turn(arm, spec);
      if (ms.off && ms.on) paired.push(ms.on / ms.off);
    }
    const p50 = (arm: Arm) => Math.round(percentile(figures.times[arm], 50));
    console.error(JSON.stringify({ round: r, off: p50('off'), on: p50('on'), load: os.loadavg()[0] }));
  }
  return { ...figures, paired };
}

/** The sentences spoken once to WAVs in `dir`, and a maker of their turns (fresh room noise each time). */
function spokenTurns(count: number, dir: string): () => TurnSpec[] {
  const sentences = voicePrompts(count);
  const wavs = sentences.map((text, i) => {
    const file = path.join(dir, `${i}.wav`);
    speakToFile(text, file);
    return file;
  });
  let noiseSeeds = 0;
  return () =>
    sentences.map((text, index) => ({ index, seed: index, text, wavFile: wavs[index], noiseSeed: 2 * ++noiseSeeds }));
}

async function main(): Promise<void> {
  const flags = pipelineFlags({
    turns: 8,
    rounds: 2,
    'output-len': 20,
    'silence-ms': 500,
    fps: 1,
  });
  const loadStart = os.loadavg()[0];
  const config = await readBenchConfig(flags.config);
  const speechDir = mkdtempSync(path.join(os.tmpdir(), 'chorus-camera-voice-'));
  const clients = await VoiceClients.start();
  const server = await startInProcessServer(config.graph, benchLogger(process.stderr));
  try {
    const off: TurnSettings = {
      baseUrl: server.baseUrl,
      apiKey: null,
      silenceMs: flags['silence-ms'],
      outputLen: flags['output-len'],
      timeoutMs: 120_000,
    };
    const settings = { off, on: { ...off, cameraFps: flags.fps } };
    const turns = spokenTurns(flags.turns, speechDir);
    const arms = await measureArms(clients, server.baseUrl, settings, turns, flags.rounds);
    const { times, held, failed, paired } = arms;
    const p50 = { off: percentile(times.off, 50), on: percentile(times.on, 50) };
    const p90 = { off: percentile(times.off, 90), on: percentile(times.on, 90) };
    const ratio = Number((p50.on / p50.off).toFixed(3));
    const report = {
      gitSha: gitSha(),
      config: flags.config,
      fps: flags.fps,
      turnsPerArm: times.off.length,
      silenceMs: off.silenceMs,
      endOfSpeechToFirstAudioMs: { p50, p90 },
      onOverOff: ratio,
      pairedOnOverOffP50: Number(percentile(paired, 50).toFixed(3)),
      goal: `on <= ${GOAL}x off (p50): ${ratio <= GOAL ? 'met' : 'missed'}`,
      failedTurns: failed,
      heldAnswers: held,
      load: { start: loadStart, end: os.loadavg()[0] },
      ms: times,
    };
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await clients.close();
    await server.close();
    rmSync(speechDir, { recursive: true, force: true });
  }
}

await main();
