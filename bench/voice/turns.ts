/**
 * A spoken turn over a Realtime session (RealtimeSession): voiceTurn streams the sentence as speech at a microphone's
 * pace, in a session of its own (every answer sees a one-item conversation), and lets the server's VAD end the turn
 * and start the answer.
 *
 * A turn's answer is the first response created after its speech ended. One created before (the VAD took a pause in
 * the sentence for its end) answers half a sentence: the turn fails, and still waits for the answer to the whole
 * sentence, so that the next sentence is never spoken over it.
 */
import { RealtimeSession, type Arrival } from '../ttfp/clients/RealtimeSession.ts';
import { deltaTraceEvent, responseOutcome, usageFields } from '../ttfp/clients/realtimeEvents.ts';
import type { TraceEvent } from '../ttfp/trace.ts';
import type { TurnSettings, TurnSpec, TurnTrace } from './protocol.ts';
import { concatPcm, msOf, quiet, readSpeech, SPEECH_RATE_HZ, trimSilence } from './speech.ts';
import { CameraFeed } from './CameraFeed.ts';

const CHUNK_MS = 20; // what a browser's AudioWorklet client appends at a time
export const CHUNK_SAMPLES = (SPEECH_RATE_HZ * CHUNK_MS) / 1000;
const LEAD_MS = 300; // room noise before the speech, as a microphone opened before the user speaks

/** What one turn has heard so far, from the session's events. */
class TurnRecord {
  readonly events: TraceEvent[] = [];
  /** performance.now() at the send of the chunk holding the last speech sample (text: the create); null before. */
  speechEndMs: number | null = null;
  speechStoppedMs?: number;
  vadAudioEndMs?: number;
  /** The turn's answer: the first response created after the speech ended. */
  requestId?: string;
  usage: ReturnType<typeof usageFields> = {};
  error?: string;
  done = false;

  end(error?: string): void {
    if (this.done) return;
    this.done = true;
    this.error ??= error;
  }

  onEvent({ e, atMs }: Arrival): void {
    if (this.done) return;
    switch (e.type) {
      case 'input_audio_buffer.speech_stopped':
        this.speechStoppedMs ??= atMs;
        this.vadAudioEndMs ??= e.audio_end_ms;
        return;
      case 'response.created':
        if (this.speechEndMs !== null) this.requestId ??= e.response?.id;
        return;
      case 'response.done': {
        if (this.requestId === undefined || e.response?.id !== this.requestId) return; // not this turn's answer
        this.events.push({ type: 'done', atMs });
        this.usage = usageFields(e.response);
        const outcome = responseOutcome(e)!;
        this.end(outcome.ok ? undefined : outcome.error);
        return;
      }
      case 'error': {
        const error = responseOutcome(e)!.error;
        // Once the answer exists its response.done ends the turn (a failed one too); after the speech and before
        // the answer, nothing else may come to end it.
        if (this.speechEndMs !== null && this.requestId === undefined) this.end(error);
        else this.error ??= error;
        return;
      }
      default: {
        if (this.requestId === undefined) return; // a response from before the speech ended
        const delta = deltaTraceEvent(e, atMs, SPEECH_RATE_HZ);
        if (delta) this.events.push(delta);
      }
    }
  }

  /**
   * Reads the session's events until `untilMs` (the next chunk's time; Infinity: the turn's end); ends the turn when
   * the session closed or deadlineMs passed.
   */
  async read(session: RealtimeSession, deadlineMs: number, untilMs: number): Promise<void> {
    while (!this.done) {
      const got = await session.next(Math.min(untilMs, deadlineMs));
      if (got === 'closed') this.end('the server closed the realtime socket');
      else if (got !== 'timeout') this.onEvent(got);
      else if (performance.now() >= deadlineMs) this.end('timeout');
      else return;
    }
  }

  trace(extra: Partial<TurnTrace> = {}): TurnTrace {
    // A pause in the sentence longer than silence_duration_ms ended the turn early: the answer timed would be to
    // half a sentence. Such a turn is a failure, not a figure.
    const early =
      this.error === undefined && (this.speechEndMs === null || (this.speechStoppedMs ?? -Infinity) < this.speechEndMs);
    const error = early ? 'the VAD ended the turn before the speech ended (a pause in the sentence?)' : this.error;
    return {
      startMs: this.speechEndMs ?? performance.now(),
      events: this.events,
      ok: error === undefined,
      ...(error !== undefined ? { error } : {}),
      ...(this.requestId !== undefined ? { requestId: this.requestId } : {}),
      ...this.usage,
      ...(this.speechStoppedMs !== undefined ? { speechStoppedMs: this.speechStoppedMs } : {}),
      ...(this.vadAudioEndMs !== undefined ? { vadAudioEndMs: this.vadAudioEndMs } : {}),
      ...extra,
    };
  }
}

/** A session for a spoken turn: server VAD answering by itself, audio answers of outputLen tokens with ignore_eos. */
async function openTurnSession(s: TurnSettings, seed: number): Promise<RealtimeSession> {
  const session = await RealtimeSession.open(s);
  await session.update({
    output_modalities: ['audio'],
    max_output_tokens: s.outputLen,
    ignore_eos: true,
    seed,
    audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: s.silenceMs } } },
  });
  return session;
}

/** The voiced part of espeak-ng's WAV, as pcm16 at 24 kHz. */
function speechOf(wavFile: string): Int16Array {
  return trimSilence(readSpeech(wavFile));
}

/** Room noise of LEAD_MS or a little more, then `speech`, which so ends on a chunk boundary. */
function withLead(speech: Int16Array, noiseSeed: number): Int16Array {
  const leadSamples = (LEAD_MS * SPEECH_RATE_HZ) / 1000;
  const pad = (CHUNK_SAMPLES - ((leadSamples + speech.length) % CHUNK_SAMPLES)) % CHUNK_SAMPLES;
  return concatPcm(quiet(((leadSamples + pad) * 1000) / SPEECH_RATE_HZ, noiseSeed), speech);
}

/**
 * Speaks `spoken` (room noise, the speech), then room noise until the turn is over, 20 ms at a time, each chunk sent
 * once a microphone would have recorded it. The send of the chunk holding the last speech sample is the moment the
 * user stopped speaking, the clock's start, on the turn's real-time clock: a send a busy client made late does not
 * move when the user finished. Returns the samples sent.
 */
async function speak(
  session: RealtimeSession,
  turn: TurnRecord,
  spoken: Int16Array,
  noiseSeed: number,
  timeoutMs: number,
): Promise<number> {
  const room = quiet(1000, noiseSeed); // looped after the speech
  const startedMs = performance.now();
  const deadlineMs = startedMs + timeoutMs + msOf(spoken);
  let sent = 0;
  for (let n = 0; !turn.done; n++) {
    await turn.read(session, deadlineMs, startedMs + (n + 1) * CHUNK_MS);
    if (turn.done) break;
    const at = n * CHUNK_SAMPLES;
    const roomAt = (at - spoken.length) % room.length;
    const part =
      at < spoken.length ? spoken.subarray(at, at + CHUNK_SAMPLES) : room.subarray(roomAt, roomAt + CHUNK_SAMPLES);
    session.send({
      type: 'input_audio_buffer.append',
      audio: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
    });
    sent += part.length;
    if (at + CHUNK_SAMPLES === spoken.length) turn.speechEndMs = startedMs + (n + 1) * CHUNK_MS;
  }
  if (turn.error === 'timeout') turn.error = `no response.done within ${timeoutMs} ms of the end of speech`;
  return sent;
}

const failed = (error: unknown): TurnTrace => ({
  startMs: performance.now(),
  events: [],
  ok: false,
  error: error instanceof Error ? error.message : String(error),
});

/** Speaks the sentence in a session of its own (speak). */
export async function voiceTurn(s: TurnSettings, t: TurnSpec): Promise<TurnTrace> {
  let speech: Int16Array;
  let session: RealtimeSession;
  try {
    speech = speechOf(t.wavFile);
    session = await openTurnSession(s, t.seed);
  } catch (err) {
    return failed(err);
  }
  const turn = new TurnRecord();
  const sink = {
    get finished() {
      return turn.done || !session.open;
    },
    send: (e: object) => session.send({ ...e }),
  };
  const camera = s.cameraFps ? CameraFeed.start(sink, s.cameraFps, t.noiseSeed) : null;
  try {
    if (camera) await camera.lead();
    const spoken = withLead(speech, t.noiseSeed);
    await speak(session, turn, spoken, t.noiseSeed + 1, s.timeoutMs);
    return turn.trace({ speechEndAudioMs: msOf(spoken), speechMs: msOf(speech) });
  } finally {
    camera?.stop();
    await session.close();
  }
}
