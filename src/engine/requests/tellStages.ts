/** What main tells the stage instances that run a request (through the pool: an instance gone reads nothing). */
import { firstAudioMessage } from '../../../stages/requestEvents.ts';
import type { StagePool } from '../pool/StagePool.ts';
import type { RequestRecord } from './RequestRecord.ts';

export function tellStages(
  pool: StagePool,
  record: RequestRecord,
  type: 'pause' | 'resume' | 'abort' | 'first_audio',
): void {
  const requestId = record.runId;
  for (const instance of record.instances.values()) {
    if (type === 'first_audio')
      pool.send(instance, firstAudioMessage(requestId)); // a kind message: who cares listens
    else pool.send(instance, type === 'abort' ? { type, requestId, reason: 'ended' } : { type, requestId });
  }
}

/** An answer can finish while an encoder still works on it (its item was dropped, text_only): stop that work. */
export function abortEncoders(pool: StagePool, record: RequestRecord): void {
  const requestId = record.runId;
  for (const instance of record.instances.values()) {
    const view = pool.instances.get(instance);
    if (view?.spec.encoder && view.inFlight.has(requestId))
      pool.send(instance, { type: 'abort', requestId, reason: 'ended' });
  }
}
