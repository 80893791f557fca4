/**
 * Events of a request that main tells every stage instance running it, as kind messages (`{type: 'kind'}`): main
 * does not know which kinds care, and a kind listens to those it does (StageCore.onKindMessage).
 */
import type { KindMessage } from '../src/worker/messages.ts';

/**
 * The request's first audio reached main (or its audio ended without any): the Thinker ends its first-packet hold,
 * a Talker that has not sized its first chunk yet stops fitting it to the held rows.
 */
export interface FirstAudio {
  readonly type: 'first_audio';
}

export function firstAudioMessage(requestId: string): KindMessage<FirstAudio> {
  return { type: 'kind', requestId, body: { type: 'first_audio' } };
}

export function isFirstAudio(body: unknown): body is FirstAudio {
  return typeof body === 'object' && body !== null && (body as { type?: unknown }).type === 'first_audio';
}
