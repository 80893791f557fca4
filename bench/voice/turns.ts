/**
 * One user turn in a Realtime session of its own, so every answer sees a one-item conversation: a voice turn streams
 * the sentence as speech at a microphone's pace and lets the server's VAD end the turn and start the answer; a text
 * turn types the same sentence (conversation.item.create input_text + response.create). Both sessions ask for the
 * same answer (audio, outputLen tokens with ignore_eos, the turn's seed), so only the input differs.
 *
 * Arrival times are taken first thing in the socket's message handler, before the frame is parsed.
 */
import { WebSocket } from 'ws';
import { deltaTraceEvent, responseOutcome, type RealtimeEvent } from '../ttfp/clients/realtimeEvents.ts';
import type { TraceEvent } from '../ttfp/trace.ts';
import type { TurnKind, TurnSettings, TurnSpec, TurnTrace } from './protocol.ts';
import { concatPcm, msOf, quiet, readSpeech, SPEECH_RATE_HZ, trimSilence } from './speech.ts';
import { CameraFeed } from './CameraFeed.ts';

const CONNECT_TIMEOUT_MS = 10_000;
export const CHUNK_MS = 20; // what a browser's AudioWorklet client appends at a time
export const CHUNK_SAMPLES = (SPEECH_RATE_HZ * CHUNK_MS) / 1000;
const LEAD_MS = 300; // room noise before the speech, as a microphone opened before the user speaks

interface Outcome {
  readonly ok: boolean;
  readonly error?: string;
}

/** A session set up for one turn; records the answer's events until response.done, an error or the deadline. */
class TurnSession {
  readonly events: TraceEvent[] = [];
  requestId?: string;
  promptTokens?: number;
  textTokens?: number;
  speechStoppedMs?: number;
  vadAudioEndMs?: number;
  transcribedMs?: number;
  #finished = false;
  readonly #outcome: Promise<Outcome>;
  #finish!: (o: Outcome) => void;

  private constructor(private readonly ws: WebSocket) {
    this.#outcome = new Promise((resolve) => (this.#finish = resolve));
    ws.on('message', (data) => this.#onMessage(performance.now(), String(data)));
    ws.on('error', (err) => this.end({ ok: false, error: `realtime socket: ${err.message}` }));
    ws.on('close', () => this.end({ ok: false, error: 'the server closed the realtime socket' }));
  }

  /** Connects and applies the session settings (and server VAD for voice turns) before the turn starts. */
  static async open(s: TurnSettings, kind: TurnKind, seed: number): Promise<TurnSession> {
    const ws = new WebSocket(s.wsUrl, {
      headers: s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {},
      perMessageDeflate: false,
    });
    const reply = (type: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${type} within ${CONNECT_TIMEOUT_MS} ms`)),
          CONNECT_TIMEOUT_MS,
        );
        const onMessage = (data: unknown) => {
          const e = JSON.parse(String(data)) as RealtimeEvent;
          if (e.type !== type && e.type !== 'error') return;
          clearTimeout(timer);
          ws.off('message', onMessage);
          if (e.type === 'error') reject(new Error(`${e.error?.code}: ${e.error?.message}`));
          else resolve();
        };
        ws.on('message', onMessage);
        ws.once('error', (err) => {
          clearTimeout(timer);
          reject(new Error(`cannot open ${s.wsUrl}: ${err.message}`));
        });
      });
    try {
      await reply('session.created');
      ws.send(
        JSON.stringify({
          type: 'session.update',
          session: {
            output_modalities: ['audio'],
            max_output_tokens: s.outputLen,
            ignore_eos: true,
            seed,
            audio: {
              input: {
                turn_detection: kind === 'voice' ? { type: 'server_vad', silence_duration_ms: s.silenceMs } : null,
                ...(kind === 'voice' && s.transcription ? { transcription: { model: 'whisper-1' } } : {}),
              },
            },
          },
        }),
      );
      await reply('session.updated');
    } catch (err) {
      ws.on('error', () => undefined); // terminate() of a socket still connecting emits one more error
      ws.terminate();
      throw err;
    }
    return new TurnSession(ws);
  }

  get finished(): boolean {
    return this.#finished;
  }

  send(event: object): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(event));
  }

  end(o: Outcome): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#finish(o);
  }

  /** The outcome, or a failure once `timeoutMs` have passed. */
  async outcome(timeoutMs: number): Promise<Outcome> {
    const timer = setTimeout(
      () => this.end({ ok: false, error: `no response.done within ${timeoutMs} ms` }),
      timeoutMs,
    );
    try {
      return await this.#outcome;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.end({ ok: false, error: 'closed' });
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    this.ws.close();
    await closed;
  }

  #onMessage(atMs: number, text: string): void {
    if (this.#finished) return;
    const e = JSON.parse(text) as RealtimeEvent;
    switch (e.type) {
      case 'input_audio_buffer.speech_stopped':
        this.speechStoppedMs ??= atMs;
        this.vadAudioEndMs ??= e.audio_end_ms;
        return;
      case 'response.created':
        this.requestId ??= e.response?.id;
        return;
      case 'conversation.item.input_audio_transcription.completed':
        this.transcribedMs ??= atMs;
        return;
      case 'response.done': {
        this.events.push({ type: 'done', atMs });
        const r = e.response;
        this.promptTokens = r?.usage?.input_tokens;
        this.textTokens = r?.usage?.output_token_details?.text_tokens;
        this.end(responseOutcome(e)!);
        return;
      }
      case 'error':
        this.end(responseOutcome(e)!);
        return;
      default: {
        const delta = deltaTraceEvent(e, atMs, SPEECH_RATE_HZ);
        if (delta) this.events.push(delta);
        return;
      }
    }
  }

  trace(kind: TurnKind, startMs: number, o: Outcome): TurnTrace {
    return {
      kind,
      startMs,
      events: this.events,
      ok: o.ok,
      ...(o.error !== undefined ? { error: o.error } : {}),
      ...(this.requestId !== undefined ? { requestId: this.requestId } : {}),
      ...(this.promptTokens !== undefined ? { promptTokens: this.promptTokens } : {}),
      ...(this.textTokens !== undefined ? { textTokens: this.textTokens } : {}),
      ...(this.speechStoppedMs !== undefined ? { speechStoppedMs: this.speechStoppedMs } : {}),
      ...(this.vadAudioEndMs !== undefined ? { vadAudioEndMs: this.vadAudioEndMs } : {}),
      ...(this.transcribedMs !== undefined ? { transcribedMs: this.transcribedMs } : {}),
    };
  }
}

const failed = (kind: TurnKind, error: unknown): TurnTrace => ({
  kind,
  startMs: performance.now(),
  events: [],
  ok: false,
  error: error instanceof Error ? error.message : String(error),
});

/** Types the sentence; the clock starts at conversation.item.create. */
export async function textTurn(s: TurnSettings, t: TurnSpec): Promise<TurnTrace> {
  let session: TurnSession;
  try {
    session = await TurnSession.open(s, 'text', t.seed);
  } catch (err) {
    return failed('text', err);
  }
  try {
    const startMs = performance.now();
    session.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: t.text }] },
    });
    session.send({ type: 'response.create' });
    return session.trace('text', startMs, await session.outcome(s.timeoutMs));
  } finally {
    await session.close();
  }
}

/** The voiced part of espeak-ng's WAV, as pcm16 at 24 kHz. */
export function speechOf(wavFile: string): Int16Array {
  return trimSilence(readSpeech(wavFile));
}

/** Room noise of LEAD_MS or a little more, then `speech`, which so ends on a chunk boundary. */
export function withLead(speech: Int16Array, noiseSeed: number): Int16Array {
  const leadSamples = (LEAD_MS * SPEECH_RATE_HZ) / 1000;
  const pad = (CHUNK_SAMPLES - ((leadSamples + speech.length) % CHUNK_SAMPLES)) % CHUNK_SAMPLES;
  return concatPcm(quiet(((leadSamples + pad) * 1000) / SPEECH_RATE_HZ, noiseSeed), speech);
}

/**
 * Speaks the sentence: room noise, the speech, then room noise until the answer is over, 20 ms at a time, each
 * chunk sent once a microphone would have recorded it. The speech is placed so that it ends on a chunk boundary:
 * the send of that chunk is the moment the user stopped speaking, the clock's start.
 */
export async function voiceTurn(s: TurnSettings, t: TurnSpec): Promise<TurnTrace> {
  let speech: Int16Array;
  let session: TurnSession;
  try {
    speech = speechOf(t.wavFile);
    session = await TurnSession.open(s, 'voice', t.seed);
  } catch (err) {
    return failed('voice', err);
  }
  const camera = s.cameraFps ? CameraFeed.start(session, s.cameraFps, t.noiseSeed) : null;
  try {
    if (camera) await camera.lead();
    const spoken = withLead(speech, t.noiseSeed);
    const room = quiet(1000, t.noiseSeed + 1); // looped after the speech
    let speechEndMs: number | null = null;
    const done = session.outcome(s.timeoutMs + msOf(spoken));
    const startedMs = performance.now();
    for (let n = 0; !session.finished; n++) {
      const due = startedMs + (n + 1) * CHUNK_MS - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      if (session.finished) break;
      const at = n * CHUNK_SAMPLES;
      const roomAt = (at - spoken.length) % room.length;
      const part =
        at < spoken.length ? spoken.subarray(at, at + CHUNK_SAMPLES) : room.subarray(roomAt, roomAt + CHUNK_SAMPLES);
      const audio = Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64');
      session.send({ type: 'input_audio_buffer.append', audio });
      // When its last sample was spoken, on the turn's real-time clock: a send a busy client made late (then caught
      // up on, with the silence after it) does not move when the user finished (it made speech_stopped look early).
      if (at + CHUNK_SAMPLES === spoken.length) speechEndMs = startedMs + (n + 1) * CHUNK_MS;
    }
    const outcome = await done;
    const trace = session.trace('voice', speechEndMs ?? performance.now(), outcome);
    const voice = { ...trace, speechEndAudioMs: msOf(spoken), speechMs: msOf(speech) };
    // A pause in the sentence longer than silence_duration_ms ends the turn early: the answer timed would be to
    // half a sentence, then cut off by the rest of it (barge-in). Such a turn is a failure, not a figure.
    if (outcome.ok && (speechEndMs === null || (trace.speechStoppedMs ?? 0) < speechEndMs))
      return {
        ...voice,
        ok: false,
        error: 'the VAD ended the turn before the speech ended (a pause in the sentence?)',
      };
    return voice;
  } finally {
    camera?.stop();
    await session.close();
  }
}
