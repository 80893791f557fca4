/**
 * One spoken conversation of `chorus bench --voice --turns`, in the voice bench's client process: a Realtime session
 * with server VAD that answers each turn by itself (create_response), in which the user speaks one sentence a turn,
 * each once the previous answer's response.done has arrived, so every answer sees the whole conversation before it.
 * A turn streams what a microphone records, as a single voice turn does (turns.ts): room noise, the sentence, then
 * room noise until the answer is over, 20 ms at a time at real-time pace. Its clock starts at the send of the chunk
 * that holds the last speech sample.
 *
 * The turn's answer is the first response created after its speech ended. One created before (the VAD took a pause
 * in the sentence for its end) answers half a sentence: the turn fails, as in the single-turn bench, and still waits
 * for the answer to the whole sentence, so that the next sentence is never spoken over it.
 *
 * Arrival times are taken first thing in the socket's message handler, before the frame is parsed.
 */
import { WebSocket } from 'ws';
import {
  deltaTraceEvent,
  responseOutcome,
  usageFields,
  type RealtimeEvent,
} from '../../ttfp/clients/realtimeEvents.ts';
import type { TraceEvent } from '../../ttfp/trace.ts';
import type { TurnSettings, TurnSpec, TurnTrace } from '../protocol.ts';
import { msOf, quiet, SPEECH_RATE_HZ } from '../speech.ts';
import { CHUNK_MS, CHUNK_SAMPLES, speechOf, withLead } from '../turns.ts';

/** session.created after connecting, session.updated after an update. */
const REPLY_TIMEOUT_MS = 10_000;

/** What one turn has heard so far. */
class TurnRecord {
  readonly events: TraceEvent[] = [];
  /** performance.now() at the send of the chunk holding the last speech sample; null while the user speaks. */
  speechEndMs: number | null = null;
  speechStoppedMs?: number;
  vadAudioEndMs?: number;
  /** The turn's answer: the first response created after the speech ended. */
  requestId?: string;
  usage: ReturnType<typeof usageFields> = {};
  error?: string;
  #done = false;

  get done(): boolean {
    return this.#done;
  }

  end(error?: string): void {
    if (this.#done) return;
    this.#done = true;
    this.error ??= error;
  }
}

interface PendingReply {
  readonly type: string;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

export class SpokenConversation {
  #turn: TurnRecord | null = null;
  #reply: PendingReply | null = null;
  /** Why the session is over (the socket failed or closed); null while it is open. */
  #gone: string | null = null;
  /** Samples appended so far: the session's audio timeline, on which the VAD's audio_end_ms is counted. */
  #sentSamples = 0;

  private constructor(
    private readonly ws: WebSocket,
    private readonly settings: TurnSettings,
  ) {
    ws.on('message', (data) => this.#onMessage(performance.now(), String(data)));
    ws.on('error', (err) => this.#end(`realtime socket: ${err.message}`));
    ws.on('close', () => this.#end('the server closed the realtime socket'));
  }

  /** Connects and turns server VAD on (answers of outputLen tokens with ignore_eos), before the first turn. */
  static async open(s: TurnSettings): Promise<SpokenConversation> {
    const ws = new WebSocket(s.wsUrl, {
      headers: s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {},
      perMessageDeflate: false,
    });
    const conversation = new SpokenConversation(ws, s);
    try {
      await conversation.#request('session.created', null);
      await conversation.#request('session.updated', {
        type: 'session.update',
        session: {
          output_modalities: ['audio'],
          max_output_tokens: s.outputLen,
          ignore_eos: true,
          audio: {
            input: {
              turn_detection: { type: 'server_vad', silence_duration_ms: s.silenceMs, create_response: true },
            },
          },
        },
      });
    } catch (err) {
      ws.on('error', () => undefined); // terminate() of a socket still connecting emits one more error
      ws.terminate();
      throw err;
    }
    return conversation;
  }

  /**
   * Speaks turn `t` and waits for its answer's response.done (or a failure, or timeoutMs past the end of speech).
   * Never rejects: a failed turn is a trace with ok false, and the conversation goes on with the next turn.
   */
  async turn(t: TurnSpec): Promise<TurnTrace> {
    const failed = (error: unknown): TurnTrace => ({
      kind: 'voice',
      startMs: performance.now(),
      events: [],
      ok: false,
      error: error instanceof Error ? error.message : String(error),
    });
    if (this.#gone !== null) return failed(this.#gone);
    let speech: Int16Array;
    try {
      speech = speechOf(t.wavFile);
      // Each turn its own seed, as in the typed conversations; set before the speech, so a held answer has it.
      await this.#request('session.updated', { type: 'session.update', session: { seed: t.seed } });
    } catch (err) {
      return failed(err);
    }
    const spoken = withLead(speech, t.noiseSeed);
    const room = quiet(1000, t.noiseSeed + 1); // looped after the speech
    const speechEndAudioMs = ((this.#sentSamples + spoken.length) * 1000) / SPEECH_RATE_HZ;
    const turn = new TurnRecord();
    this.#turn = turn;
    const timeoutMs = this.settings.timeoutMs;
    const timer = setTimeout(
      () => turn.end(`no response.done within ${timeoutMs} ms of the end of speech`),
      timeoutMs + msOf(spoken),
    );
    try {
      const startedMs = performance.now();
      for (let n = 0; !turn.done; n++) {
        const due = startedMs + (n + 1) * CHUNK_MS - performance.now();
        if (due > 0) await new Promise((r) => setTimeout(r, due));
        if (turn.done) break;
        if (this.#gone !== null) {
          turn.end(this.#gone);
          break;
        }
        const at = n * CHUNK_SAMPLES;
        const roomAt = (at - spoken.length) % room.length;
        const part =
          at < spoken.length ? spoken.subarray(at, at + CHUNK_SAMPLES) : room.subarray(roomAt, roomAt + CHUNK_SAMPLES);
        const audio = Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64');
        this.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio }));
        this.#sentSamples += part.length;
        // When its last sample was spoken, on the turn's real-time clock (not when a busy client got to send it).
        if (at + CHUNK_SAMPLES === spoken.length) turn.speechEndMs = startedMs + (n + 1) * CHUNK_MS;
      }
    } finally {
      clearTimeout(timer);
      this.#turn = null;
    }
    // A pause in the sentence longer than silence_duration_ms ended the turn early: the answer timed would be to
    // half a sentence. Such a turn is a failure, not a figure (as in the single-turn bench).
    const early =
      turn.error === undefined && (turn.speechEndMs === null || (turn.speechStoppedMs ?? -Infinity) < turn.speechEndMs);
    const error = early ? 'the VAD ended the turn before the speech ended (a pause in the sentence?)' : turn.error;
    return {
      kind: 'voice',
      startMs: turn.speechEndMs ?? performance.now(),
      events: turn.events,
      ok: error === undefined,
      ...(error !== undefined ? { error } : {}),
      ...(turn.requestId !== undefined ? { requestId: turn.requestId } : {}),
      ...turn.usage,
      ...(turn.speechStoppedMs !== undefined ? { speechStoppedMs: turn.speechStoppedMs } : {}),
      ...(turn.vadAudioEndMs !== undefined ? { vadAudioEndMs: turn.vadAudioEndMs } : {}),
      speechEndAudioMs,
      speechMs: msOf(speech),
    };
  }

  async close(): Promise<void> {
    this.#end('closed');
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    this.ws.close();
    await closed;
  }

  /** Sends `event` (none: only waits) and waits for the server event `type`; an error event rejects. */
  #request(type: string, event: object | null): Promise<void> {
    if (this.#gone !== null) return Promise.reject(new Error(this.#gone));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#reply = null;
        reject(new Error(`no ${type} within ${REPLY_TIMEOUT_MS} ms`));
      }, REPLY_TIMEOUT_MS);
      const settle = (err?: Error) => {
        clearTimeout(timer);
        this.#reply = null;
        if (err) reject(err);
        else resolve();
      };
      this.#reply = { type, resolve: () => settle(), reject: settle };
      if (event) this.ws.send(JSON.stringify(event));
    });
  }

  #end(reason: string): void {
    if (this.#gone !== null) return;
    this.#gone = reason;
    this.#reply?.reject(new Error(reason === 'closed' ? reason : `cannot talk to ${this.settings.wsUrl}: ${reason}`));
    this.#turn?.end(reason);
  }

  #onMessage(atMs: number, text: string): void {
    const e = JSON.parse(text) as RealtimeEvent;
    const turn = this.#turn;
    const reply = this.#reply;
    if (reply && !turn) {
      if (e.type === reply.type) reply.resolve();
      else if (e.type === 'error') reply.reject(new Error(responseOutcome(e)!.error));
      return;
    }
    if (!turn || turn.done) return;
    switch (e.type) {
      case 'input_audio_buffer.speech_stopped':
        turn.speechStoppedMs ??= atMs;
        turn.vadAudioEndMs ??= e.audio_end_ms;
        return;
      case 'response.created':
        if (turn.speechEndMs !== null) turn.requestId ??= e.response?.id;
        return;
      case 'response.done': {
        if (turn.requestId === undefined || e.response?.id !== turn.requestId) return; // not this turn's answer
        turn.events.push({ type: 'done', atMs });
        turn.usage = usageFields(e.response);
        const outcome = responseOutcome(e)!;
        turn.end(outcome.ok ? undefined : outcome.error);
        return;
      }
      case 'error': {
        const error = responseOutcome(e)!.error;
        // Once the answer exists its response.done ends the turn (a failed one too); after the speech and before
        // the answer, nothing else may come to end it.
        if (turn.speechEndMs !== null && turn.requestId === undefined) turn.end(error);
        else turn.error ??= error;
        return;
      }
      default: {
        if (turn.requestId === undefined) return; // a response from before the speech ended
        const delta = deltaTraceEvent(e, atMs, SPEECH_RATE_HZ);
        if (delta) turn.events.push(delta);
      }
    }
  }
}
