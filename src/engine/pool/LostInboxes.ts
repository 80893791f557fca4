/**
 * The frames pushed over Redis into a remote instance that was lost (issue 30 item 4): nobody will pop them, and each
 * list would wait for its connector's ttl_seconds. Its lists for the runs it held are dropped at the loss, and once
 * more when the last instance still holding such a run has let it go (the lost run's upstream stages drop it at once,
 * but a frame they pushed before their abort's `finished` may land after the first drop, and even after the second:
 * their pushes go out on their own connection, so each also deletes them there after its pushes, Connector.dropSent).
 * The instance's own in-lists only: frames it pushed into others are dropped by their consumers when the lost run ends
 * there (Connector.cleanup).
 *
 * Mechanism-free: the pool gives it a way to ask whether any instance holds a run and a way to drop the lists.
 */
export interface LostInboxesContext {
  /** Whether any instance still has the run in flight (it may still push frames into the lost one's lists). */
  heldAnywhere(runId: string): boolean;
  /** Deletes the lists of frames pushed into `instance` for these runs (best effort: a TTL keeps the bound). */
  drop(instance: string, runIds: readonly string[]): void;
}

export class LostInboxes {
  /** Runs still held somewhere -> the lost instances whose lists of them must be dropped again once they are not. */
  readonly #pending = new Map<string, Set<string>>();

  constructor(private readonly ctx: LostInboxesContext) {}

  /** A remote instance was lost holding these runs. */
  lost(instance: string, runIds: readonly string[]): void {
    if (runIds.length === 0) return;
    this.ctx.drop(instance, runIds);
    for (const runId of runIds) {
      if (!this.ctx.heldAnywhere(runId)) continue;
      const lost = this.#pending.get(runId) ?? new Set<string>();
      lost.add(instance);
      this.#pending.set(runId, lost);
    }
  }

  /** An instance let the run go (it finished there, or that instance was lost or hung too). */
  released(runId: string): void {
    const lost = this.#pending.get(runId);
    if (!lost || this.ctx.heldAnywhere(runId)) return;
    this.#pending.delete(runId);
    for (const instance of lost) this.ctx.drop(instance, [runId]);
  }

  /** Runs whose lists are waiting for their last holder (bounded by the runs in flight). */
  get pendingRuns(): number {
    return this.#pending.size;
  }
}
