/**
 * What a person checks by ear that a sound is speech, as numbers: its duration, its level, how much of it is sound
 * rather than silence, how much of that is voiced (periodic at a speaking pitch), its zero-crossing rate, and
 * clipping. `looksLikeSpeech` turns them into the bounds the tts tests hold speech to; white noise, a tone and
 * silence each fail them (test/model/tts/piperSpeech.test.ts shows it).
 */

export interface SpeechStats {
  readonly durationS: number;
  /** RMS of the frames with sound, in dBFS. */
  readonly activeRmsDb: number;
  /** Fraction of 20 ms frames within 35 dB of the loudest. */
  readonly activeFraction: number;
  /** Fraction of active frames whose autocorrelation peaks at a pitch of 60-400 Hz with correlation >= 0.5. */
  readonly voicedFraction: number;
  /** Zero crossings per second over the active frames. */
  readonly zeroCrossingsPerS: number;
  /** Fraction of samples at full scale (|x| >= 0.999). */
  readonly clippedFraction: number;
}

const FRAME_S = 0.02;
const ACTIVE_DB_BELOW_PEAK = 35;

export function speechStats(pcm: Float32Array, sampleRateHz: number): SpeechStats {
  const frame = Math.round(FRAME_S * sampleRateHz);
  const frames: { start: number; rms: number }[] = [];
  for (let start = 0; start + frame <= pcm.length; start += frame) {
    let sum = 0;
    for (let i = start; i < start + frame; i++) sum += pcm[i] * pcm[i];
    frames.push({ start, rms: Math.sqrt(sum / frame) });
  }
  const peak = Math.max(1e-9, ...frames.map((f) => f.rms));
  const active = frames.filter((f) => f.rms > peak * 10 ** (-ACTIVE_DB_BELOW_PEAK / 20));
  let energy = 0;
  let crossings = 0;
  let voiced = 0;
  for (const f of active) {
    energy += f.rms * f.rms;
    for (let i = f.start + 1; i < f.start + frame; i++) if (pcm[i - 1] < 0 !== pcm[i] < 0) crossings++;
    if (isVoiced(pcm, f.start, sampleRateHz)) voiced++;
  }
  let clipped = 0;
  for (const x of pcm) if (Math.abs(x) >= 0.999) clipped++;
  const activeS = (active.length * frame) / sampleRateHz;
  return {
    durationS: pcm.length / sampleRateHz,
    activeRmsDb: active.length > 0 ? 10 * Math.log10(energy / active.length) : -Infinity,
    activeFraction: frames.length > 0 ? active.length / frames.length : 0,
    voicedFraction: active.length > 0 ? voiced / active.length : 0,
    zeroCrossingsPerS: activeS > 0 ? crossings / activeS : 0,
    clippedFraction: pcm.length > 0 ? clipped / pcm.length : 0,
  };
}

/** A 40 ms window from `start` is periodic at a pitch between 60 and 400 Hz (normalized autocorrelation >= 0.5). */
function isVoiced(pcm: Float32Array, start: number, rateHz: number): boolean {
  const n = Math.round(0.04 * rateHz);
  if (start + n > pcm.length) return false;
  const minLag = Math.floor(rateHz / 400);
  const maxLag = Math.ceil(rateHz / 60);
  const len = n - maxLag;
  let e0 = 0;
  for (let i = 0; i < len; i++) e0 += pcm[start + i] ** 2;
  let best = 0;
  for (let lag = minLag; lag <= maxLag; lag++) {
    let dot = 0;
    let e1 = 0;
    for (let i = 0; i < len; i++) {
      dot += pcm[start + i] * pcm[start + i + lag];
      e1 += pcm[start + i + lag] ** 2;
    }
    if (e0 > 0 && e1 > 0) best = Math.max(best, dot / Math.sqrt(e0 * e1));
  }
  return best >= 0.5;
}

/** The bounds speech meets; each failed one named. `referenceS`: another synthesizer's duration for the same text. */
export function speechProblems(s: SpeechStats, referenceS: number): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  check(
    s.durationS >= 0.5 * referenceS && s.durationS <= 2 * referenceS,
    `duration ${s.durationS.toFixed(2)} s not within 0.5-2x ${referenceS.toFixed(2)} s`,
  );
  check(s.activeRmsDb >= -35 && s.activeRmsDb <= -6, `level ${s.activeRmsDb.toFixed(1)} dBFS outside -35..-6`);
  check(
    s.activeFraction >= 0.5 && s.activeFraction <= 0.98,
    `sound in ${(100 * s.activeFraction).toFixed(0)}% of frames (speech pauses: 50-98%)`,
  );
  check(s.voicedFraction >= 0.3, `voiced ${(100 * s.voicedFraction).toFixed(0)}% of sound frames (< 30%)`);
  check(
    s.zeroCrossingsPerS >= 300 && s.zeroCrossingsPerS <= 5000,
    `${s.zeroCrossingsPerS.toFixed(0)} zero crossings/s outside 300-5000`,
  );
  check(s.clippedFraction < 0.001, `${(100 * s.clippedFraction).toFixed(2)}% of samples clipped`);
  return problems;
}
