/**
 * One soak session: a Realtime WebSocket that asks deterministic questions one after another until told to stop,
 * and records each answer (transcript, audio) or how it ended. With abortRate, some answers are cancelled as soon
 * as they are created: the abort storm.
 */
import { isErrorFor, RealtimeSession } from '../ttfp/clients/RealtimeSession.ts';

export interface SoakAnswer {
  readonly prompt: number;
  readonly status: string; // completed | incomplete | cancelled | failed | closed
  readonly code: string | null; // the error code of a failed answer
  readonly transcript: string;
  readonly audio: Buffer;
  readonly ttfpMs: number | null;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

export class SoakSession {
  readonly answers: SoakAnswer[] = [];
  #stopped = false;
  #asked = 0;

  private constructor(private readonly rt: RealtimeSession) {}

  /**
   * Ready once the server has said session.created: a frame sent before it would be answered after it, and the fuzz
   * reads "the next event" as the answer to its frame.
   */
  static async open(baseUrl: string): Promise<SoakSession> {
    return new SoakSession(await RealtimeSession.open({ baseUrl, apiKey: null }));
  }

  stop(): void {
    this.#stopped = true;
  }

  /** Asks prompts[i % n] in turn (i from `first`) until stop(); returns when the last answer has ended. */
  async run(prompts: readonly string[], first: number, maxTokens: number, abortRate: number, rng: () => number) {
    for (let i = first; !this.#stopped && this.rt.open; i++) {
      const a = await this.ask(i % prompts.length, prompts[i % prompts.length], maxTokens, rng() < abortRate);
      this.answers.push(a);
      // A refusal (a stage restarting, the server busy) is retried after a pause, as a client would.
      if (a.status === 'failed') await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async ask(prompt: number, text: string, maxTokens: number, abort: boolean): Promise<SoakAnswer> {
    const startedAtMs = performance.now();
    let transcript = '';
    const audio: Buffer[] = [];
    let ttfpMs: number | null = null;
    const answer = (status: string, code: string | null): SoakAnswer => ({
      prompt,
      status,
      code,
      transcript,
      audio: Buffer.concat(audio),
      ttfpMs,
      startedAtMs,
      endedAtMs: performance.now(),
    });
    const createId = `soak_${++this.#asked}`; // the error refusing this create names it
    this.rt.send({
      type: 'response.create',
      event_id: createId,
      response: {
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }],
        max_output_tokens: maxTokens,
        seed: 7,
        conversation: 'none',
      },
    });
    // Events of this answer only: after response.created, those naming its id; before it, an error naming the
    // create means it was refused (others are about an earlier cancel that raced its answer's end).
    let responseId: string | null = null;
    for (;;) {
      const got = await this.rt.next();
      if (typeof got === 'string') return answer('closed', null);
      const e = got.e;
      if (responseId === null) {
        if (e.type === 'response.created') {
          responseId = e.response?.id ?? null;
          // The storm cancels while the answer is being generated (short answers outrun a later cancel).
          if (abort) this.rt.send({ type: 'response.cancel', response_id: responseId });
        } else if (isErrorFor(e, createId)) return answer('failed', e.error?.code ?? null);
        continue;
      }
      if (e.type === 'response.done' && e.response?.id === responseId)
        return answer(e.response.status ?? 'failed', e.response.status_details?.error?.code ?? null);
      if (e.response_id !== responseId) continue; // an error about our cancel racing the end, or stale
      if (e.type === 'response.output_audio_transcript.delta') transcript += e.delta ?? '';
      else if (e.type === 'response.output_audio.delta') {
        ttfpMs ??= got.atMs - startedAtMs;
        audio.push(Buffer.from(e.delta ?? '', 'base64'));
      }
    }
  }

  /** Sends raw text (fuzz) and resolves with the next event's type, or 'closed'. */
  async sendRaw(text: string): Promise<string> {
    this.rt.send(text);
    const got = await this.rt.next();
    return typeof got === 'string' ? 'closed' : got.e.type;
  }

  close(): void {
    void this.rt.close();
  }
}
