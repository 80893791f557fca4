/**
 * Voice turns of a Realtime session with server VAD as spans: `realtime.turn` from the server's speech_started to its
 * speech_stopped (or timeout_triggered), a child of the session's trace context (the upgrade's traceparent; without
 * one, each turn is its own trace, as each response is). Attributes: chorus.item_id (the user item the turn is
 * committed as, which the answer's conversation names), chorus.audio_start_ms and chorus.audio_end_ms (on the
 * session's input audio timeline), chorus.turn_end (speech_stopped | timeout_triggered | closed). The answer that
 * follows is its own `realtime.response` root; the turn's prefill while the user speaks is `realtime.voice_prefill`.
 *
 * It watches the server events the turns send, so the VAD code keeps no tracing of its own.
 */
import type { Context, Span } from '@opentelemetry/api';
import { spanTime } from './spanClock.ts';
import type { Tracing } from './tracing.ts';

/** The fields of the Realtime server events this reads (ServerEvent.ts has them all). */
export interface TurnEventFields {
  readonly type: string;
  readonly item_id?: string;
  readonly audio_start_ms?: number;
  readonly audio_end_ms?: number;
}

const ENDS = new Set(['input_audio_buffer.speech_stopped', 'input_audio_buffer.timeout_triggered']);

export class TurnSpans {
  #open: Span | null = null;

  private constructor(
    private readonly tracing: Tracing,
    private readonly parent: Context,
  ) {}

  /** Null without tracing: the session then calls nothing. */
  static of(tracing: Tracing | null, parent: Context): TurnSpans | null {
    return tracing ? new TurnSpans(tracing, parent) : null;
  }

  /** An event the session is about to send. */
  observe(event: TurnEventFields): void {
    if (event.type === 'input_audio_buffer.speech_started') {
      this.#end('closed'); // a turn with no end event (not expected): it stops where the next begins
      this.#open = this.tracing.tracer.startSpan(
        'realtime.turn',
        {
          startTime: spanTime(),
          attributes: {
            ...(event.item_id ? { 'chorus.item_id': event.item_id } : {}),
            ...(event.audio_start_ms !== undefined ? { 'chorus.audio_start_ms': event.audio_start_ms } : {}),
          },
        },
        this.parent,
      );
      return;
    }
    if (!ENDS.has(event.type) || !this.#open) return;
    if (event.audio_end_ms !== undefined) this.#open.setAttribute('chorus.audio_end_ms', event.audio_end_ms);
    this.#end(event.type.slice('input_audio_buffer.'.length));
  }

  /** The session closed: a turn still being spoken ends here. */
  close(): void {
    this.#end('closed');
  }

  #end(how: string): void {
    const span = this.#open;
    if (!span) return;
    this.#open = null;
    span.setAttribute('chorus.turn_end', how);
    span.end(spanTime());
  }
}
