/** TurnDetector's semantic_vad hooks: the end_of_turn_probe after probeMs of silence, and confirmEndOfTurn. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TURN_PARAMS, TurnDetector, type TurnEvent, type TurnParams } from '../../src/voice/TurnDetector.ts';

const W = 32;
const semantic: TurnParams = {
  ...DEFAULT_TURN_PARAMS,
  silenceDurationMs: 4000,
  endOfTurn: { probeMs: 200, threshold: 0.5 },
};

function feed(detector: TurnDetector, probs: number[]): TurnEvent[] {
  return probs.flatMap((p) => detector.push(p));
}

describe('TurnDetector end-of-turn probe (semantic_vad)', () => {
  it('probes once per silence run after probeMs, with where the turn starts; the model ends the turn', () => {
    const d = new TurnDetector(semantic, W);
    const speech = feed(d, [...Array<number>(10).fill(0.05), ...Array<number>(20).fill(0.9)]);
    expect(speech).toEqual([{ type: 'speech_started', audioStartMs: 10 * W - 300 }]);
    const perWindow = Array.from({ length: 12 }, () => d.push(0.02)); // 384 ms of silence
    const silence = perWindow.flat();
    const probes = silence.filter((e) => e.type === 'end_of_turn_probe');
    expect(probes).toEqual([{ type: 'end_of_turn_probe', runId: 1, turnStartMs: 10 * W - 300 }]);
    // The probe comes in the first window that ends 200 ms into the run (the run starts at the first silent window).
    const at = perWindow.findIndex((events) => events.some((e) => e.type === 'end_of_turn_probe'));
    expect(at).toBe(Math.ceil(200 / W) - 1);
    expect(silence.map((e) => e.type)).not.toContain('speech_stopped'); // 4 s is the bound
    expect(d.confirmEndOfTurn(2)).toEqual([]); // another run's answer ends nothing
    const [stopped] = d.confirmEndOfTurn(1);
    expect(stopped).toMatchObject({ type: 'speech_stopped', audioEndMs: 30 * W });
    expect(d.speaking).toBe(false);
    expect(d.confirmEndOfTurn(1)).toEqual([]); // once
  });

  it('an answer for a run that speech cancelled ends nothing; the next run is probed again', () => {
    const d = new TurnDetector(semantic, W);
    feed(d, Array<number>(20).fill(0.9));
    feed(d, Array<number>(8).fill(0.02)); // probed: run 1
    feed(d, Array<number>(5).fill(0.9)); // speech again
    expect(d.confirmEndOfTurn(1)).toEqual([]);
    expect(d.speaking).toBe(true);
    const again = feed(d, Array<number>(8).fill(0.02));
    expect(again.filter((e) => e.type === 'end_of_turn_probe')).toMatchObject([{ runId: 2 }]);
  });

  it('without a model the silence bound ends the turn; server_vad params never probe', () => {
    const d = new TurnDetector(semantic, W);
    feed(d, Array<number>(20).fill(0.9));
    const events = feed(d, Array<number>(Math.ceil(4000 / W) + 2).fill(0.02));
    expect(events.map((e) => e.type)).toContain('speech_stopped');
    const plain = new TurnDetector(DEFAULT_TURN_PARAMS, W);
    const all = feed(plain, [...Array<number>(20).fill(0.9), ...Array<number>(30).fill(0.02)]);
    expect(all.map((e) => e.type)).not.toContain('end_of_turn_probe');
  });

  it('refuses an endOfTurn threshold outside 0..1', () => {
    expect(() => new TurnDetector({ ...semantic, endOfTurn: { probeMs: 200, threshold: 2 } }, W)).toThrow(RangeError);
  });
});
