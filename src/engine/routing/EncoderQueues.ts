/**
 * What main knows of each encoder instance's load, for routing (chooseRoute's EncoderLoad): the rows of the items
 * main sent there that are not finished yet, and the seconds per row learned from the `finished` reports that came
 * back, per instance and per instance and modality. No encoder reports either: a request's rows join the queue when
 * it is routed and leave it at the instance's `finished` for it, or when the request ends before that.
 *
 * A rate is the time from the request's admission to `finished` over its rows and the rows queued there ahead of
 * them (the instance works through those first). The per-modality rate is learned only from a request whose items on
 * the instance were of one modality: a mixed request's time cannot be shared out between its modalities.
 */
import { MODALITIES } from '../../common/modality.ts';
import type { MediaModality } from '../../common/encoderSettings.ts';
import type { EncoderLoad, RouteItem } from './chooseRoute.ts';
import { LearnedRates } from './LearnedRates.ts';

/** An encoder instance's part of a request: its rows, the rows queued there before them, and their modality. */
export interface EncoderWork {
  rows: number;
  readonly rowsAhead: number;
  modality: MediaModality | 'mixed';
}

export class EncoderQueues {
  readonly #queuedRows = new Map<string, number>();
  readonly #secondsPerRow = new LearnedRates();
  /** `instance modality` -> seconds per row, from requests whose items on the instance were of one modality. */
  readonly #secondsPerRowOf = new LearnedRates();

  /**
   * A routed request's items to encode (not those the EC store holds) join the queues of the instances that take
   * them (`instanceOf`): its part on each instance, which it hands back at finished() or released().
   */
  admit(items: readonly RouteItem[], instanceOf: (item: RouteItem) => string): Map<string, EncoderWork> {
    const parts = new Map<string, EncoderWork>();
    for (const item of items) {
      const instance = instanceOf(item);
      const work = parts.get(instance) ?? { rows: 0, rowsAhead: this.#rows(instance), modality: item.modality };
      work.rows += item.numEmbeddings;
      if (work.modality !== item.modality) work.modality = 'mixed';
      parts.set(instance, work);
    }
    for (const [instance, work] of parts) this.#queuedRows.set(instance, this.#rows(instance) + work.rows);
    return parts;
  }

  /** `instance` finished its part of a request admitted `elapsedMs` ago: its rows leave the queue; learn its rate. */
  finished(instance: string, work: EncoderWork, elapsedMs: number): void {
    this.#leave(instance, work);
    if (elapsedMs <= 0 || work.rows === 0) return;
    const secondsPerRow = elapsedMs / 1000 / (work.rowsAhead + work.rows);
    this.#secondsPerRow.learn(instance, secondsPerRow);
    if (work.modality !== 'mixed') this.#secondsPerRowOf.learn(`${instance} ${work.modality}`, secondsPerRow);
  }

  /** The request ended: its parts not finished leave their queues (and `parts` is emptied). */
  released(parts: Map<string, EncoderWork>): void {
    for (const [instance, work] of parts) this.#leave(instance, work);
    parts.clear();
  }

  /** What chooseRoute's snapshot needs of `instance`'s queue and rates. */
  loadOf(instance: string): Pick<EncoderLoad, 'queuedRows' | 'secondsPerRow' | 'secondsPerRowOf'> {
    const secondsPerRowOf: Partial<Record<MediaModality, number>> = {};
    for (const m of MODALITIES) {
      const rate = this.#secondsPerRowOf.get(`${instance} ${m}`);
      if (rate !== null) secondsPerRowOf[m] = rate;
    }
    return { queuedRows: this.#rows(instance), secondsPerRow: this.#secondsPerRow.get(instance), secondsPerRowOf };
  }

  #rows(instance: string): number {
    return this.#queuedRows.get(instance) ?? 0;
  }

  #leave(instance: string, work: EncoderWork): void {
    this.#queuedRows.set(instance, this.#rows(instance) - work.rows);
  }
}
