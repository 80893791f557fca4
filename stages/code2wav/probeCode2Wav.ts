/**
 * Measures what a foreign Code2Wav file does not declare: samples per frame (from the output lengths of
 * 1 and 2 frames) and the causal receptive field (change frame 0, see how far the change reaches). A file
 * whose earlier samples change when a later frame changes is not causal: streaming could not reproduce
 * an offline decode, so it is refused.
 */
import * as ort from 'onnxruntime-node';
import { signatureError } from '../models/decoderSignature.ts';
import type { SyncSession } from '../models/SyncSession.ts';

const PROBE_FRAMES = 64;

function decode(session: SyncSession, numCodebooks: number, frames: number, changedFrame: number | null): Float32Array {
  const codes = new BigInt64Array(numCodebooks * frames);
  if (changedFrame !== null) for (let q = 0; q < numCodebooks; q++) codes[q * frames + changedFrame] = 1n;
  return session.run({ codes: new ort.Tensor('int64', codes, [1, numCodebooks, frames]) }, ['audio']).audio
    .data as Float32Array;
}

function differs(a: Float32Array, b: Float32Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (a[i] !== b[i]) return true;
  return false;
}

export function probeCode2Wav(
  session: SyncSession,
  numCodebooks: number,
  what: string,
): { samplesPerFrame: number; receptiveFieldFrames: number } {
  const one = decode(session, numCodebooks, 1, null).length;
  const two = decode(session, numCodebooks, 2, null).length;
  const spf = two - one;
  if (spf <= 0 || one !== spf)
    throw signatureError(
      what,
      `returns ${one} samples for 1 frame and ${two} for 2: expected frames x samples_per_frame`,
    );

  const base = decode(session, numCodebooks, PROBE_FRAMES, null);
  const lastChanged = decode(session, numCodebooks, PROBE_FRAMES, PROBE_FRAMES - 1);
  if (differs(base, lastChanged, 0, (PROBE_FRAMES - 1) * spf)) {
    throw signatureError(
      what,
      'is not causal (a later frame changes earlier samples): streamed audio could not match an offline decode',
    );
  }
  const firstChanged = decode(session, numCodebooks, PROBE_FRAMES, 0);
  let reach = 0;
  for (let t = 0; t < PROBE_FRAMES; t++) if (differs(base, firstChanged, t * spf, (t + 1) * spf)) reach = t;
  if (reach >= PROBE_FRAMES - 1)
    throw signatureError(
      what,
      `has a receptive field of ${PROBE_FRAMES} frames or more: too long to stream with left context`,
    );
  return { samplesPerFrame: spf, receptiveFieldFrames: reach };
}
