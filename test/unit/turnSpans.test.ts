/** Voice turns as spans: speech_started -> speech_stopped (or timeout_triggered, or the session closing). */
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { contextFromTraceparent } from '../../src/tracing/traceContext.ts';
import { TurnSpans } from '../../src/tracing/turnSpans.ts';
import { memoryTracing } from '../helpers/memoryTracing.ts';

const { tracing, spans: finishedSpans, reset } = memoryTracing();
afterAll(() => tracing.shutdown());

const CLIENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('TurnSpans', () => {
  it('is null without tracing', () => {
    expect(TurnSpans.of(null, ROOT_CONTEXT)).toBeNull();
  });

  it("makes one realtime.turn span per turn under the session's context, ended by its end event", () => {
    reset();
    const turns = TurnSpans.of(tracing, contextFromTraceparent(CLIENT))!;
    turns.observe({ type: 'input_audio_buffer.speech_started', item_id: 'item_1', audio_start_ms: 300 });
    turns.observe({ type: 'response.output_audio.delta' }); // not a turn event
    expect(finishedSpans()).toEqual([]);
    turns.observe({ type: 'input_audio_buffer.speech_stopped', item_id: 'item_1', audio_end_ms: 1800 });
    turns.observe({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 2000 }); // no turn open: nothing
    turns.observe({ type: 'input_audio_buffer.speech_started', item_id: 'item_2', audio_start_ms: 2500 });
    turns.observe({ type: 'input_audio_buffer.timeout_triggered', item_id: 'item_2', audio_end_ms: 9000 });
    turns.observe({ type: 'input_audio_buffer.speech_started', item_id: 'item_3', audio_start_ms: 9500 });
    turns.close();
    const spans = finishedSpans();
    expect(spans.map((s) => [s.name, s.attributes])).toEqual([
      [
        'realtime.turn',
        {
          'chorus.item_id': 'item_1',
          'chorus.audio_start_ms': 300,
          'chorus.audio_end_ms': 1800,
          'chorus.turn_end': 'speech_stopped',
        },
      ],
      [
        'realtime.turn',
        {
          'chorus.item_id': 'item_2',
          'chorus.audio_start_ms': 2500,
          'chorus.audio_end_ms': 9000,
          'chorus.turn_end': 'timeout_triggered',
        },
      ],
      ['realtime.turn', { 'chorus.item_id': 'item_3', 'chorus.audio_start_ms': 9500, 'chorus.turn_end': 'closed' }],
    ]);
    const parent = trace.getSpanContext(contextFromTraceparent(CLIENT))!;
    for (const s of spans) {
      expect(s.spanContext().traceId).toBe(parent.traceId);
      expect(s.parentSpanContext?.spanId).toBe(parent.spanId);
    }
  });
});
