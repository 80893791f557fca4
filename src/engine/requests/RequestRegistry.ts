/** The live requests by id: the one engine map keyed by request id (each record holds all the rest). */
import { ChorusError, ErrorCodes, type SerializedError } from '../../common/errors.ts';
import type { PlannedHold } from '../admission/planAdmission.ts';
import { requestIdOfRun } from './migration.ts';
import type { RequestRecord } from './RequestRecord.ts';

const NOTHING = (): void => {};

export class RequestRegistry {
  readonly #records = new Map<string, RequestRecord>();

  /** onLive: told when the first request comes (true) and when the last one goes (false). */
  constructor(private readonly onLive: (live: boolean) => void = () => {}) {}

  get(requestId: string): RequestRecord | undefined {
    return this.#records.get(requestId);
  }

  /**
   * The record of a run id (what stages and edges know a request by): undefined for a run that is not the request's
   * current one (a migrated request's lost run: its late chunks and reports are not the replay's).
   */
  ofRun(runId: string): RequestRecord | undefined {
    const record = this.#records.get(requestIdOfRun(runId));
    return record?.runId === runId ? record : undefined;
  }

  has(requestId: string): boolean {
    return this.#records.has(requestId);
  }

  /** Refuses an id that is live already: its chunks and aborts would reach the other request. */
  checkFree(requestId: string): void {
    if (this.#records.has(requestId))
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request id ${requestId} is already in use`);
  }

  add(record: RequestRecord): void {
    this.#records.set(record.requestId, record);
    if (this.#records.size === 1) this.onLive(true);
  }

  /**
   * A request is about to go live: its adds go out before its record is added (commitRequest.ts), and the first one
   * after a quiet spell tells onLive now, so what onLive holds (the idle cores polling) is in force when its stages
   * wake. Call what it returns if the request then never comes (refused): with none live, onLive hears the end.
   */
  arriving(): () => void {
    if (this.#records.size > 0) return NOTHING;
    this.onLive(true);
    return () => {
      if (this.#records.size === 0) this.onLive(false);
    };
  }

  /** Releases the record and forgets it. */
  release(record: RequestRecord): void {
    record.release();
    if (this.#records.get(record.requestId) !== record) return;
    this.#records.delete(record.requestId);
    if (this.#records.size === 0) this.onLive(false);
  }

  values(): IterableIterator<RequestRecord> {
    return this.#records.values();
  }

  /** Ends every live request with `error` (each ending releases its record). */
  endAll(error: SerializedError): void {
    for (const record of this.#records.values()) record.stream.end('error', error);
  }

  /** Live requests that are load on the stages: paused ones hold no batch slot. */
  get load(): number {
    let load = 0;
    for (const r of this.#records.values()) if (!r.paused) load++;
    return load;
  }

  /**
   * Live requests still before their first audio (paused ones hold no slot): with first outputs first, the ones a
   * newcomer's first chunk shares the stages' steps with (the Talker sizes its first chunk by the same count,
   * TalkerCore.firstChunkSharing). Those already speaking run in steps of their own, or are held back while it waits
   * (FirstAudioFirst.ts).
   */
  get beforeFirstAudio(): number {
    let n = 0;
    for (const r of this.#records.values()) if (!r.paused && r.stream.firstAudioAtMs === null) n++;
    return n;
  }

  /**
   * Commits an admitted request's planned hold: admitted past the light-load rung, it ends every hold (a held
   * Thinker would resume behind the newcomers' prefills while its listener has only the first chunk to play:
   * configs/omni-bench.yaml, a burst of 48 right after a lone request, a 1.4 s stall); with a hold of its own, its
   * Thinker waits for its first audio, and `release` tells it to go on.
   */
  commitHold(record: RequestRecord, hold: PlannedHold, release: (audioOut: boolean) => void): void {
    if (hold.endsOtherHolds) for (const r of this.#records.values()) r.releaseHold();
    if (hold.tokens !== undefined) record.holdUntilFirstAudio(release);
  }
}
