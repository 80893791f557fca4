/** Turn detection settings and truncation of spoken text: pure parts of the Realtime voice turns. */
import { describe, expect, it } from 'vitest';
import { voicedText } from '../../src/server/realtime/VoiceTurns.ts';
import { resolveTurnDetection, SERVER_VAD_DEFAULTS } from '../../src/server/realtime/turnDetection.ts';

describe('resolveTurnDetection', () => {
  it('server_vad starts from OpenAI defaults; a partial update keeps the rest; null turns it off', () => {
    const on = resolveTurnDetection({ type: 'server_vad', silence_duration_ms: 300 }, null);
    expect(on).toEqual({ ...SERVER_VAD_DEFAULTS, silence_duration_ms: 300 });
    const tuned = resolveTurnDetection({ type: 'server_vad', threshold: 0.7, idle_timeout_ms: 5000 }, on);
    expect(tuned).toEqual({ ...SERVER_VAD_DEFAULTS, silence_duration_ms: 300, threshold: 0.7, idle_timeout_ms: 5000 });
    expect(resolveTurnDetection(undefined, tuned)).toBe(tuned);
    expect(resolveTurnDetection(null, tuned)).toBeNull();
    expect(
      (resolveTurnDetection({ type: 'server_vad', idle_timeout_ms: null }, tuned) as typeof SERVER_VAD_DEFAULTS)
        .idle_timeout_ms,
    ).toBeNull();
  });
});

describe('voicedText', () => {
  // "Hello there, how are you" as 6 tokens in 4 pieces; 2 frames per token at 80 ms a frame: 160 ms per token.
  const pieces = [
    { text: 'Hello', tokens: 1 },
    { text: ' there,', tokens: 2 },
    { text: ' how are', tokens: 2 },
    { text: ' you', tokens: 1 },
  ];
  const spoken = { pieces, audioMs: 960 };

  it('keeps the pieces whose tokens had begun to sound by audio_end_ms', () => {
    expect(voicedText(spoken, 0, 160)).toBe('');
    expect(voicedText(spoken, 100, 160)).toBe('Hello');
    expect(voicedText(spoken, 170, 160)).toBe('Hello there,');
    expect(voicedText(spoken, 500, 160)).toBe('Hello there, how are');
    expect(voicedText(spoken, 960, 160)).toBe('Hello there, how are you');
  });

  it('without frames per token, maps the played share of the audio onto the tokens', () => {
    expect(voicedText(spoken, 480, null)).toBe('Hello there,'); // half the audio: 3 of 6 tokens
    expect(voicedText(spoken, 2000, null)).toBe('Hello there, how are you');
  });

  it('the Thinker ran ahead of the audio: tokens not yet voiced are cut even at the end of the audio sent', () => {
    const ahead = { pieces, audioMs: 320 }; // 2 tokens voiced, 6 written
    expect(voicedText(ahead, 300, 160)).toBe('Hello there,');
    expect(voicedText(ahead, 320, 160)).toBe('Hello there,');
  });
});
