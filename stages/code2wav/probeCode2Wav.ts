/**
 * Measures what a foreign Code2Wav file does not declare: samples per frame (from the output lengths of
 * 1 and 2 frames) and the causal receptive field (change frame 0, see how far the change reaches). A file
 * whose earlier samples change when a later frame changes is not causal: streaming could not reproduce
 * an offline decode, so it is refused. checkStateCarries holds a stateful file to the same promise.
 */
import { signatureError } from '../models/decoderSignature.ts';
import type { Code2WavRunner } from '../types.ts';

const PROBE_FRAMES = 64;

/** One offline decode (a stateful file: from zero state) of codes [1, Q, frames] -> samples. */
export type RunCodes = (codes: BigInt64Array, frames: number) => Float32Array;

function decode(run: RunCodes, numCodebooks: number, frames: number, changedFrame: number | null): Float32Array {
  const codes = new BigInt64Array(numCodebooks * frames);
  if (changedFrame !== null) for (let q = 0; q < numCodebooks; q++) codes[q * frames + changedFrame] = 1n;
  return run(codes, frames);
}

function differs(a: Float32Array, b: Float32Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (a[i] !== b[i]) return true;
  return false;
}

export function probeCode2Wav(
  run: RunCodes,
  numCodebooks: number,
  what: string,
): { samplesPerFrame: number; receptiveFieldFrames: number } {
  const one = decode(run, numCodebooks, 1, null).length;
  const two = decode(run, numCodebooks, 2, null).length;
  const spf = two - one;
  if (spf <= 0 || one !== spf)
    throw signatureError(
      what,
      `returns ${one} samples for 1 frame and ${two} for 2: expected frames x samples_per_frame`,
    );

  const base = decode(run, numCodebooks, PROBE_FRAMES, null);
  const lastChanged = decode(run, numCodebooks, PROBE_FRAMES, PROBE_FRAMES - 1);
  if (differs(base, lastChanged, 0, (PROBE_FRAMES - 1) * spf)) {
    throw signatureError(
      what,
      'is not causal (a later frame changes earlier samples): streamed audio could not match an offline decode',
    );
  }
  const firstChanged = decode(run, numCodebooks, PROBE_FRAMES, 0);
  let reach = 0;
  for (let t = 0; t < PROBE_FRAMES; t++) if (differs(base, firstChanged, t * spf, (t + 1) * spf)) reach = t;
  if (reach >= PROBE_FRAMES - 1)
    throw signatureError(
      what,
      `has a receptive field of ${PROBE_FRAMES} frames or more: too long to stream with left context`,
    );
  return { samplesPerFrame: spf, receptiveFieldFrames: reach };
}

const CARRY_FRAMES = [3, 5];
/** Streamed through its state vs decoded whole: float differences beyond this mean the state does not carry. */
const CARRY_TOLERANCE = 1e-4;

/**
 * A stateful file must stream exactly: frames decoded as two chunks (the second with no left context, from the
 * state the first left) must give the audio of one whole decode. A file whose state does not carry is refused.
 */
export function checkStateCarries(runner: Code2WavRunner, what: string): void {
  const q = runner.numCodebooks;
  const total = CARRY_FRAMES[0] + CARRY_FRAMES[1];
  const codes = Int32Array.from({ length: q * total }, (_, i) => ((i * 7) % 3 === 0 ? 1 : 0));
  const framesOf = (from: number, to: number) => {
    const out = new Int32Array(q * (to - from));
    for (let b = 0; b < q; b++) out.set(codes.subarray(b * total + from, b * total + to), b * (to - from));
    return out;
  };
  const [whole] = runner.decode([{ seqId: CHECK_WHOLE, codes, numFrames: total, contextFrames: 0 }]);
  const [first] = runner.decode([
    { seqId: CHECK_STREAMED, codes: framesOf(0, CARRY_FRAMES[0]), numFrames: CARRY_FRAMES[0], contextFrames: 0 },
  ]);
  const [second] = runner.decode([
    { seqId: CHECK_STREAMED, codes: framesOf(CARRY_FRAMES[0], total), numFrames: CARRY_FRAMES[1], contextFrames: 0 },
  ]);
  runner.free(CHECK_WHOLE);
  runner.free(CHECK_STREAMED);
  const streamed = new Float32Array(whole.length);
  streamed.set(first);
  streamed.set(second, first.length);
  let worst = first.length + second.length === whole.length ? 0 : Infinity;
  for (let i = 0; i < whole.length; i++) worst = Math.max(worst, Math.abs(whole[i] - streamed[i]));
  if (!(worst <= CARRY_TOLERANCE))
    throw signatureError(
      what,
      `has past_state/present_state but streaming through them differs from a whole decode (max diff ${worst}): ` +
        'present_state must be the past_state of the next chunk',
    );
}

const CHECK_WHOLE = '__chorus_state_check_whole__';
const CHECK_STREAMED = '__chorus_state_check_streamed__';
