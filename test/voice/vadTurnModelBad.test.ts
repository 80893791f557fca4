/**
 * A Smart Turn file that does not load (corrupt, in the user cache where .ci/run puts the real one) costs server_vad
 * nothing: the VAD worker loads it only for the first stream that asks for semantic_vad, which gets
 * CHORUS_ERR_END_OF_TURN_MODEL_UNAVAILABLE naming the file and the fix; the Realtime turns (VoiceTurns) then turn
 * detection off with that error, or run the silence rule where the YAML falls back to it. Nothing is left running.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChorusError, ErrorCodes, isChorusError } from '../../src/common/errors.ts';
import { defaultSmartTurnPath } from '../../src/config/semanticVad.ts';
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { DEFAULT_TURN_PARAMS, VadService, type TurnEvent } from '../../src/voice/VadService.ts';
import { VoiceTurns, type TurnHost } from '../../src/server/realtime/VoiceTurns.ts';
import {
  afterTurnModelFailure,
  resolveTurnDetection,
  SERVER_VAD_DEFAULTS,
} from '../../src/server/realtime/turnDetection.ts';
import { ClientInputError } from '../../src/server/validate.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { concat, espeak, frames, silence, toPcm16 } from './speech.ts';

const workerPorts = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;

let cacheDir: string | undefined;
let file: string;
let portsBefore: number;
beforeEach(() => {
  portsBefore = workerPorts();
  cacheDir = process.env.CHORUS_CACHE_DIR;
  process.env.CHORUS_CACHE_DIR = tempDir('smart-turn-bad');
  file = defaultSmartTurnPath();
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, 'not an ONNX graph: a download cut short');
});
afterEach(() => {
  if (cacheDir === undefined) delete process.env.CHORUS_CACHE_DIR;
  else process.env.CHORUS_CACHE_DIR = cacheDir;
});

/** The YAML's realtime.semantic_vad with no model: the file in the (temp) user cache is the one found. */
function spec(fallback: 'refuse' | 'silence') {
  return { modelPath: defaultSmartTurnPath(), fallback };
}

/** Speech then silence, in 20 ms frames. */
function turnFrames(): Int16Array[] {
  const { samples } = concat(silence(400), espeak('hello, how are you today').samples, silence(1200));
  return frames(toPcm16(samples));
}

/** A stream listener recording the turn's events, and the turn's end. */
function recorder() {
  const events: string[] = [];
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => (resolve = r));
  const saw = (type: string) => {
    events.push(type);
    if (type === 'speech_stopped') resolve();
  };
  return { events, stopped, saw, listen: (e: TurnEvent) => isTentative(e) || saw(e.type) };
}

describe('a corrupt Smart Turn file', () => {
  it('leaves server_vad working; semantic_vad gets the error naming the file and the fix', async () => {
    const vad = await VadService.start({ turnModelPath: spec('refuse').modelPath, workers: 2 });
    try {
      const first = recorder();
      const before = vad.open(DEFAULT_TURN_PARAMS, (e) => first.listen(e));
      for (const frame of turnFrames()) before.push(frame);
      await first.stopped;
      expect(first.events).toEqual(['speech_started', 'speech_stopped']);
      before.close();

      const failed = await vad.loadTurnModel().then(
        () => null,
        (err: unknown) => err,
      );
      expect(isChorusError(failed, ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE)).toBe(true);
      expect((failed as Error).message).toContain(file);
      expect((failed as Error).message).toMatch(/Smart Turn v3.*docs\/voice\.md#semantic_vad/);
      expect(vad.turnModelFailure).toBe(failed);
      await expect(vad.loadTurnModel()).rejects.toBe(failed); // asked once, answered the same
      const semantic = { ...DEFAULT_TURN_PARAMS, endOfTurn: { probeMs: 200, threshold: 0.5 } };
      expect(() => vad.open(semantic, () => {})).toThrow(failed as Error);

      // Still serving: a new server_vad stream finds the next turn.
      const next = recorder();
      const stream = vad.open(DEFAULT_TURN_PARAMS, (e) => next.listen(e));
      for (const frame of turnFrames()) stream.push(frame);
      await next.stopped;
      expect(next.events).toEqual(['speech_started', 'speech_stopped']);
      stream.close();
    } finally {
      await vad.close();
    }
    expect(workerPorts()).toBe(portsBefore); // every worker thread has exited
  }, 60_000);

  it('Realtime turns: semantic_vad goes off with the error (refuse) or runs the silence rule (fallback)', async () => {
    const vad = await VadService.start({ turnModelPath: spec('refuse').modelPath });
    try {
      for (const fallback of ['refuse', 'silence'] as const) {
        const semanticVad = spec(fallback);
        const sent: string[] = [];
        const turn = recorder();
        let failed!: (err: ChorusError) => void;
        const failure = new Promise<ChorusError>((resolve) => (failed = resolve));
        let turns = resolveTurnDetection({ type: 'semantic_vad' }, null, semanticVad);
        const voice = new VoiceTurns(() => Promise.resolve(vad), {
          ...host(turn, sent),
          turnModelFailed: (err) => {
            const after = afterTurnModelFailure(turns, semanticVad, err);
            turns = after.turns;
            if (after.error) sent.push(`${after.error.code}: ${after.error.message}`);
            failed(err);
            return after.turns;
          },
        });
        voice.configure(turns);
        for (const f of turnFrames()) voice.push(Buffer.from(f.buffer, f.byteOffset, f.byteLength));
        expect(isChorusError(await failure, ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE)).toBe(true);
        if (fallback === 'refuse') {
          expect(turns).toBeNull();
          expect(voice.active).toBeNull();
          expect(sent).toHaveLength(1);
          expect(sent[0]).toContain(ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE);
          expect(sent[0]).toContain(file);
          expect(sent[0]).toMatch(/fallback: silence.*server_vad.*input_audio_buffer\.commit/);
          // Known now: the next session.update asking for it is refused at once (the session stays as it was).
          let refused: unknown;
          try {
            resolveTurnDetection({ type: 'semantic_vad' }, null, semanticVad, vad.turnModelFailure);
          } catch (err) {
            refused = err;
          }
          expect(refused).toBeInstanceOf(ClientInputError);
          expect(refused).toMatchObject({
            code: ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE,
            param: 'session.audio.input.turn_detection.type',
          });
        } else {
          // The YAML falls back to the silence rule: the turn ends on silence, and the session says why.
          await turn.stopped;
          expect(sent).toEqual([]);
          expect(turns).toMatchObject({
            type: 'semantic_vad',
            chorus_end_of_turn: { model: null, silence_duration_ms: SERVER_VAD_DEFAULTS.silence_duration_ms },
          });
          expect(JSON.stringify(turns)).toContain(file);
          expect(turn.events).toEqual(['speech_started', 'speech_stopped']);
          // Known now: a session asking for it falls back at once.
          const next = resolveTurnDetection({ type: 'semantic_vad' }, null, semanticVad, vad.turnModelFailure);
          expect(next).toMatchObject({ chorus_end_of_turn: { model: null } });
        }
        voice.close();
      }
    } finally {
      await vad.close();
    }
    expect(workerPorts()).toBe(portsBefore);
  }, 60_000);
});

/** A session as VoiceTurns sees it: no responses, nothing to commit, the turn events it announces recorded. */
function host(turn: ReturnType<typeof recorder>, sent: string[]): Omit<TurnHost, 'turnModelFailed'> {
  return {
    send: (e) => {
      if (e.type === 'input_audio_buffer.speech_started') turn.saw('speech_started');
      if (e.type === 'input_audio_buffer.speech_stopped') turn.saw('speech_stopped');
    },
    active: () => null,
    audioMs: () => 0,
    bufferStartMs: () => 0,
    hasInputAudio: () => false,
    commit: () => {},
    respond: () => {},
    speculate: () => {},
    dropSpeculation: () => {},
    speechStarted: () => {},
    fail: (err) => sent.push(`fail: ${String(err)}`),
    disabled: (err) => sent.push(`disabled: ${err.message}`),
  };
}
