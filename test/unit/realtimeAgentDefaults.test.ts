/**
 * What the OpenAI Agents SDK's first session.update asks for, resolved: semantic_vad onto the end-of-turn model (or
 * the YAML's fallback, or a refusal naming the fix), and session.tracing onto span attributes.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import {
  EAGERNESS,
  PROBE_SILENCE_MS,
  resolveTurnDetection,
  SERVER_VAD_DEFAULTS,
  turnParams,
} from '../../src/server/realtime/turnDetection.ts';
import { parseTracing, tracingAttributes, tracingStatus } from '../../src/server/realtime/sessionTracing.ts';
import { ClientInputError } from '../../src/server/validate.ts';

const withModel = { modelPath: '/models/smart-turn.onnx', fallback: 'refuse' } as const;

describe('semantic_vad', () => {
  it('maps eagerness onto the model threshold and the silence bound (auto is medium)', () => {
    for (const eagerness of ['low', 'medium', 'high', 'auto'] as const) {
      const t = resolveTurnDetection({ type: 'semantic_vad', eagerness }, null, withModel)!;
      const { threshold, maxSilenceMs } = EAGERNESS[eagerness === 'auto' ? 'medium' : eagerness];
      expect(t).toEqual({
        type: 'semantic_vad',
        eagerness,
        create_response: true,
        interrupt_response: true,
        chorus_end_of_turn: {
          model: 'smart-turn-v3',
          threshold,
          probe_silence_ms: PROBE_SILENCE_MS,
          max_silence_ms: maxSilenceMs,
        },
      });
      expect(turnParams(t)).toMatchObject({
        silenceDurationMs: maxSilenceMs,
        endOfTurn: { probeMs: PROBE_SILENCE_MS, threshold },
      });
    }
    expect(EAGERNESS.low.threshold).toBeGreaterThan(EAGERNESS.high.threshold);
    expect(EAGERNESS.low.maxSilenceMs).toBeGreaterThan(EAGERNESS.high.maxSilenceMs);
  });

  it('a partial update keeps the rest; server_vad after it starts from server_vad defaults', () => {
    const low = resolveTurnDetection(
      { type: 'semantic_vad', eagerness: 'low', create_response: false },
      null,
      withModel,
    );
    const same = resolveTurnDetection({ type: 'semantic_vad' }, low, withModel);
    expect(same).toMatchObject({ eagerness: 'low', create_response: false });
    expect(resolveTurnDetection({ type: 'server_vad' }, same, withModel)).toEqual(SERVER_VAD_DEFAULTS);
  });

  it('without a model: refused naming the fix, unless the YAML falls back to the silence rule (said so)', () => {
    const none = { modelPath: null, fallback: 'refuse' } as const;
    let refused: unknown;
    try {
      resolveTurnDetection({ type: 'semantic_vad' }, null, none);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ClientInputError);
    expect(refused).toMatchObject({
      code: ErrorCodes.PARAM_UNSUPPORTED,
      param: 'session.audio.input.turn_detection.type',
    });
    expect((refused as Error).message).toMatch(/fallback: silence/);
    const silence = resolveTurnDetection({ type: 'semantic_vad' }, null, { modelPath: null, fallback: 'silence' })!;
    expect(silence).toMatchObject({ chorus_end_of_turn: { model: null, silence_duration_ms: 500 } });
    expect(turnParams(silence)).toEqual({
      threshold: 0.5,
      prefixPaddingMs: 300,
      silenceDurationMs: 500,
      idleTimeoutMs: null,
    });
  });
});

describe('session.tracing', () => {
  it('takes "auto", null and {workflow_name, group_id, metadata}, as span attributes', () => {
    expect(tracingAttributes(parseTracing('auto'))).toEqual({ 'chorus.workflow_name': 'Realtime Session' });
    expect(tracingAttributes(parseTracing(null))).toEqual({});
    const named = parseTracing({ workflow_name: 'support', group_id: 'g1', metadata: { tier: 'gold', n: 2 } });
    expect(tracingAttributes(named)).toEqual({
      'chorus.workflow_name': 'support',
      'chorus.group_id': 'g1',
      'chorus.metadata.tier': 'gold',
      'chorus.metadata.n': '2',
    });
  });

  it('refuses other values naming the field', () => {
    for (const [value, param] of [
      ['on', 'session.tracing'],
      [{ workflow: 'x' }, 'session.tracing'],
      [{ group_id: 7 }, 'session.tracing.group_id'],
      [{ metadata: [] }, 'session.tracing.metadata'],
    ] as const)
      expect(() => parseTracing(value)).toThrow(expect.objectContaining({ param }));
  });

  it('says whether anything is recorded', () => {
    expect(tracingStatus(false)).toMatch(/^off: this server exports no traces/);
    expect(tracingStatus(true)).toMatch(/^on/);
  });
});
