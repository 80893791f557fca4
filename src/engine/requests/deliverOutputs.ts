/** Chunks that reached main, handed to their requests' streams (an arrival's error ends its request). */
import { diagnostics } from '../../common/diagnostics.ts';
import { serializeError } from '../../common/errors.ts';
import type { Arrival } from '../../../transport/registry.ts';
import { MAIN } from '../../common/graph.ts';
import { packetMark, packetMarksOn } from '../../common/packetMarks.ts';
import type { RequestRegistry } from './RequestRegistry.ts';

export function deliverOutputs(arrivals: readonly Arrival[], requests: RequestRegistry): void {
  for (const a of arrivals) {
    const record = requests.ofRun(a.requestId);
    if (!record) continue;
    // Its first output: the entry stage's prefill is done, and the adds that waited for it go (addsAfterFirstOutput).
    record.sendLaterAdds();
    if (a.error) {
      record.stream.end('error', serializeError(a.error));
      continue;
    }
    const m = a.chunk.meta;
    if (diagnostics.edgeChunk.hasSubscribers) {
      diagnostics.edgeChunk.publish({
        from: m.from,
        to: MAIN,
        latencyMs: a.chunk.receivedAtMs - m.sentAtMs,
        bytes: a.chunk.bytes,
      });
    }
    if (packetMarksOn()) {
      packetMark(a.requestId, 'got', a.chunk.gotAtMs, m.from);
      packetMark(a.requestId, 'delivered', undefined, m.from);
    }
    record.stream.onChunk(m.from, a.chunk);
    if (record.stream.firstTextAtMs !== null) record.firstToken(record.stream.firstTextAtMs);
    if (record.stream.firstAudioAtMs !== null) record.firstAudio(record.stream.firstAudioAtMs);
  }
}
