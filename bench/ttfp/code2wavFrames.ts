/**
 * The Code2Wav decode ratio of a run: codec frames the vocoders ran over frames of audio they sent, from the
 * server's /metrics (chorus_code2wav_*_total, summed over Code2Wav instances) before and after the run. A stateless
 * vocoder decodes each chunk's left context again (~2 with 25-frame chunks and 25 frames of context); a stateful one
 * decodes each frame once (1).
 */
import type { ClientTarget } from './clients/BenchClient.ts';

export interface Code2WavFrames {
  readonly framesDecoded: number;
  readonly audioFrames: number;
}

const DECODED = 'chorus_code2wav_frames_decoded_total';
const AUDIO = 'chorus_code2wav_audio_frames_total';
/** Stages report their totals every 250 ms: a value unchanged over this long is the run's last report. */
const SETTLE_MS = 600;
const POLL_MS = 100;
const SETTLE_DEADLINE_MS = 10_000;

/** Sum of a metric's samples in Prometheus text (0 when the server has none: no Code2Wav, or none reported yet). */
export function sumMetric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}

/** The server's totals now; null when it serves no /metrics the bench can read. */
async function scrapeCode2WavFrames(target: ClientTarget): Promise<Code2WavFrames | null> {
  try {
    const res = await fetch(`${target.baseUrl}/metrics`, {
      headers: target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {},
    });
    if (!res.ok) return null;
    const text = await res.text();
    return { framesDecoded: sumMetric(text, DECODED), audioFrames: sumMetric(text, AUDIO) };
  } catch {
    return null;
  }
}

/**
 * The totals once the run's last stats have arrived: polled until they hold still for SETTLE_MS (the stages
 * report every 250 ms, so a run's last frames show up within one report after its last response).
 */
export async function settledCode2WavFrames(target: ClientTarget): Promise<Code2WavFrames | null> {
  const deadline = Date.now() + SETTLE_DEADLINE_MS;
  let last = await scrapeCode2WavFrames(target);
  let since = Date.now();
  while (last !== null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const now = await scrapeCode2WavFrames(target);
    if (now === null) return last;
    if (now.framesDecoded !== last.framesDecoded || now.audioFrames !== last.audioFrames) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= SETTLE_MS) return now;
  }
  return last;
}

/** What the vocoders did between two scrapes; null when either is missing (a server without /metrics). */
export function framesBetween(before: Code2WavFrames | null, after: Code2WavFrames | null): Code2WavFrames | null {
  if (!before || !after) return null;
  return {
    framesDecoded: after.framesDecoded - before.framesDecoded,
    audioFrames: after.audioFrames - before.audioFrames,
  };
}

/** Two spans together (a run measured in blocks); null when either is unknown. */
export function addFrames(a: Code2WavFrames | null, b: Code2WavFrames | null): Code2WavFrames | null {
  return a && b
    ? { framesDecoded: a.framesDecoded + b.framesDecoded, audioFrames: a.audioFrames + b.audioFrames }
    : null;
}

/** Frames decoded per frame of audio over a span; null when unknown or without audio. */
export function decodeRatio(span: Code2WavFrames | null): number | null {
  return span && span.audioFrames > 0 ? span.framesDecoded / span.audioFrames : null;
}
