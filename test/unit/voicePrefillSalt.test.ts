/**
 * A voice prefill (src/voice/VoicePrefill.ts) runs in its session's cache partition: its request carries the
 * session's cache salt as it is when the prefill starts, so the answer, which carries the same salt, finds the blocks
 * the prefill computed (named within that salt); a session without one prefills in the default partition.
 */
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Engine, GenerateRequest, RequestHandle } from '../../src/common/engine.ts';
import { PrefillSlots, VoicePrefill } from '../../src/voice/VoicePrefill.ts';

function recordingEngine(requests: GenerateRequest[]): Engine {
  const handle = (requestId: string): RequestHandle => ({
    requestId,
    prompt: { text: 0, audio: 0, image: 0, video: 0 },
    events: new Observable(),
    cancel: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
  });
  return {
    generate: (request: GenerateRequest) => {
      requests.push(request);
      return handle(request.requestId!);
    },
    releasePrefix: () => undefined,
  } as unknown as Engine;
}

const log = { debug: () => undefined } as never;
const messages = () => [{ role: 'user' as const, content: 'hello' }];

describe('VoicePrefill cache salt', () => {
  it("prefills under the session's salt of the moment, and under none without one", () => {
    const requests: GenerateRequest[] = [];
    let salt: string | undefined = 'salt-a';
    const salted = VoicePrefill.for(recordingEngine(requests), new PrefillSlots(2), 'voice-1', log, () => salt)!;
    salted.onAudio(700, messages);
    expect(requests[0]).toMatchObject({ cacheSalt: 'salt-a', prefix: { key: 'voice-1', prefillOnly: true } });
    const plain = VoicePrefill.for(recordingEngine(requests), new PrefillSlots(2), 'voice-2', log)!;
    plain.onAudio(700, messages);
    expect(requests[1]).not.toHaveProperty('cacheSalt');
    salt = undefined;
    const cleared = VoicePrefill.for(recordingEngine(requests), new PrefillSlots(2), 'voice-3', log, () => salt)!;
    cleared.onAudio(700, messages);
    expect(requests[2]).not.toHaveProperty('cacheSalt');
  });
});
