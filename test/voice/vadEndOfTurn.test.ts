/**
 * semantic_vad's end-of-turn model through VadService on real speech (espeak-ng): Smart Turn v3 in the VAD worker
 * ends a finished sentence's turn after the probe silence, long before the silence bound; a score the model gives
 * below the threshold leaves the bound in charge. Needs Smart Turn v3 where .ci/run puts it
 * (src/config/semanticVad.ts).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultSmartTurnPath } from '../../src/config/semanticVad.ts';
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { DEFAULT_TURN_PARAMS, VadService, type TurnEvent, type TurnParams } from '../../src/voice/VadService.ts';
import { concat, espeak, frames, silence, toPcm16 } from './speech.ts';

let vad: VadService;
type Answer = { probability: number; runMs: number };
let waiting: ((a: Answer) => void) | null = null;
const onAnswer = (m: unknown) => waiting?.(m as Answer);
beforeAll(async () => {
  vad = await VadService.start({ turnModelPath: defaultSmartTurnPath() });
  await vad.loadTurnModel(); // loaded for the first stream that asks, as the Realtime session does
  subscribe('chorus:vad:endOfTurn', onAnswer);
}, 60_000);
afterAll(async () => {
  unsubscribe('chorus:vad:endOfTurn', onAnswer);
  await vad?.close();
});

const BOUND_MS = 4000;
const semantic = (threshold: number): TurnParams => ({
  ...DEFAULT_TURN_PARAMS,
  silenceDurationMs: BOUND_MS,
  endOfTurn: { probeMs: 200, threshold },
});

/** Pushes speech then `silenceMs` of silence; resolves with the turn's end event (or none) and the model's answer. */
async function turn(params: TurnParams, silenceMs: number) {
  const speech = espeak('What is the weather like in Paris today?');
  const { samples, startsMs } = concat(silence(500), speech.samples, silence(silenceMs));
  const speechEndMs = startsMs[1] + speech.durationMs;
  let stopped: Extract<TurnEvent, { type: 'speech_stopped' }> | null = null;
  // The model answers once per silence run; the events it causes are delivered within the same call, before the
  // awaited answer resolves.
  const answer = new Promise<Answer>((resolve) => (waiting = resolve));
  const stream = vad.open(params, (e) => {
    if (!isTentative(e) && e.type === 'speech_stopped') stopped = e;
  });
  for (const frame of frames(toPcm16(samples))) stream.push(frame);
  const { probability, runMs } = await answer;
  stream.close();
  return { stopped: stopped as Extract<TurnEvent, { type: 'speech_stopped' }> | null, speechEndMs, probability, runMs };
}

describe('semantic_vad on Smart Turn v3', () => {
  it('a finished question ends its turn on the model, with no wait for the silence bound', async () => {
    const { stopped, speechEndMs, probability, runMs } = await turn(semantic(0.5), 1000);
    expect(probability).toBeGreaterThan(0.5);
    expect(runMs).toBeGreaterThan(0);
    expect(stopped).not.toBeNull();
    // Where the speech ended, though only 1 s of silence followed (the bound is 4 s).
    expect(Math.abs(stopped!.audioEndMs - speechEndMs)).toBeLessThan(200);
  }, 30_000);

  it('a score under the threshold ends nothing: the silence bound decides', async () => {
    const { stopped, probability } = await turn(semantic(1), 1000);
    expect(probability).toBeLessThan(1);
    expect(stopped).toBeNull(); // 1 s of silence < the 4 s bound
  }, 30_000);
});
