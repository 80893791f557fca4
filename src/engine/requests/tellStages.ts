/** What main tells the stage instances that run a request (through the pool: an instance gone reads nothing). */
import { firstAudioMessage } from '../../../stages/requestEvents.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import type { StagePool } from '../pool/StagePool.ts';
import { LIGHT_LOAD_MAX_LIVE } from '../../sched/chunkPolicy.ts';
import type { RequestRecord } from './RequestRecord.ts';

type Pool = Pick<StagePool, 'instances' | 'send'>;
type Record = Pick<RequestRecord, 'runId' | 'instances' | 'sendLaterAdds'>;

/**
 * An add that waits for the first output (stageAdds.ts addsAfterFirstOutput) goes first: every instance that counts
 * the run reads its add before an abort, pause or resume of it, and acknowledges an abort with `finished` (an abort
 * of a request it never saw gets none, and the instance would count it as load for good).
 */
export function tellStages(pool: Pool, record: Record, type: 'pause' | 'resume' | 'abort'): void {
  record.sendLaterAdds();
  const requestId = record.runId;
  for (const instance of record.instances.values())
    pool.send(instance, type === 'abort' ? { type, requestId, reason: 'ended' } : { type, requestId });
}

/**
 * The request's hold ended: its first audio reached main (`audioOut`; or its audio ended without any), or load
 * arrived. A kind message to the instances whose kind acts on it then (descriptor hearsFirstAudio). Code2Wav and the
 * encoders are not woken by it (at c=1 Code2Wav is then making the answer's next chunks), nor the Talker once the
 * audio is out (it made the first chunk the message would resize; it then waits for the released Thinker's rows).
 */
export function tellFirstAudio(pool: Pool, record: Record, audioOut: boolean): void {
  record.sendLaterAdds();
  for (const instance of record.instances.values()) {
    const view = pool.instances.get(instance);
    const hears = view ? descriptorOf(view.spec.kind).hearsFirstAudio : undefined;
    if (!view || !(hears === 'always' || (hears === 'beforeAudio' && !audioOut))) continue;
    // The kind that hears it always (the Thinker) resumes a held request at once: lightly loaded, it sleeps until
    // then, and woken on main's core it took that core for its step while main was still sending the first audio
    // (bench/NOTES.md, "The wake-up's move came after the wake-up").
    const computesAtOnce = hears === 'always' && view.inFlight.size <= LIGHT_LOAD_MAX_LIVE;
    pool.send(instance, firstAudioMessage(record.runId), { computesAtOnce });
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
