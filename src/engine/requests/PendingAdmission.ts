/**
 * A request that arrives while a stage it needs has no ready instance, only a (re)starting one expected back within
 * chunk_timeout_ms (issue 30 item 5: a chaos soak's Thinker restart refused ~1,000 responses). It waits for that
 * instance, as a migrating request does (Migrations.ts), instead of being refused OVERLOADED: its client gets its
 * handle at once and sees a later first output, the pause a restart costs. It is admitted on the first READY that
 * makes its plan servable; past the deadline it ends with OVERLOADED saying what it waited for. A restart expected to
 * take longer than the deadline, or a stage with no instance coming back (failed), is refused at once, as before,
 * with the 503 and Retry-After the front end derives from /health (src/server/admission/retryAfter.ts).
 */
import { Observable, type Subscriber } from 'rxjs';
import type { GenerateRequest, OutputEvent, PromptTokens, RequestHandle, StageHealth } from '../../common/engine.ts';
import { ChorusError, ErrorCodes, serializeError, type SerializedError } from '../../common/errors.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { Logger } from '../../common/log.ts';
import { routedStages } from '../admission/planAdmission.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import { RowsWait } from '../MediaRowsBudget.ts';
import { diagnostics } from '../../common/diagnostics.ts';

/**
 * What a request over `stageIds` would wait for, from /health's view of the pool: the stages with no ready instance
 * and how long until the last of them has one (each stage's soonest (re)starting instance; an overdue one counts 0).
 * Null when there is nothing to wait for: every stage has a ready instance, or one has none ready nor expected
 * (failed, or a first start with no estimate).
 */
export function restartWait(
  stageIds: readonly string[],
  health: readonly StageHealth[],
): { readonly waitMs: number; readonly stages: readonly string[] } | null {
  let waitMs = 0;
  const stages: string[] = [];
  for (const stageId of stageIds) {
    const own = health.filter((h) => h.stageId === stageId);
    if (own.some((h) => h.status === 'ready')) continue;
    const estimates = own.flatMap((h) => (h.readyInMs === undefined ? [] : [h.readyInMs]));
    if (estimates.length === 0) return null;
    stages.push(stageId);
    waitMs = Math.max(waitMs, Math.min(...estimates));
  }
  return stages.length === 0 ? null : { waitMs, stages };
}

/** The prompt by modality, as RequestStream.promptTokenDetails counts it at admission (no item dropped yet). */
export function promptTokensOf(prompt: PreparedPrompt): PromptTokens {
  const counts = { text: prompt.promptTokenIds.length, audio: 0, image: 0, video: 0 };
  for (const item of prompt.items) {
    counts.text -= item.numEmbeddings; // a placeholder position, not a text token
    counts[item.modality] += item.numEmbeddings;
  }
  return counts;
}

export interface PendingAdmissionOptions {
  readonly requestId: string;
  /** The prompt as it will be admitted (the handle's `prompt`). */
  readonly prompt: PromptTokens;
  readonly deadlineMs: number;
  /** What it waits for, for the deadline's error ("talker#0 to restart"). */
  readonly waitingFor: string;
  /** Tries the admission: the request's handle, or throws (OVERLOADED: not yet servable; anything else: fails it). */
  admit(): RequestHandle;
  /** It left the waiting set (admitted, failed or cancelled). */
  settled(): void;
}

export class PendingAdmission {
  readonly handle: RequestHandle;
  readonly #subscribers = new Set<Subscriber<OutputEvent>>();
  readonly #timer: NodeJS.Timeout;
  #real: RequestHandle | null = null;
  #done: Extract<OutputEvent, { type: 'done' }> | null = null;
  #paused = false;

  constructor(private readonly o: PendingAdmissionOptions) {
    const waitedMs = o.deadlineMs - Date.now();
    this.#timer = setTimeout(
      () =>
        this.#end('error', {
          code: ErrorCodes.OVERLOADED,
          message: `waited ${waitedMs} ms (chunk_timeout_ms) for ${o.waitingFor}, in vain: retry shortly`,
        }),
      Math.max(0, waitedMs),
    );
    const events = new Observable<OutputEvent>((subscriber) => {
      if (this.#real) return this.#real.events.subscribe(subscriber);
      if (this.#done) {
        subscriber.next(this.#done);
        subscriber.complete();
        return undefined;
      }
      this.#subscribers.add(subscriber);
      return () => this.#subscribers.delete(subscriber);
    });
    this.handle = {
      requestId: o.requestId,
      prompt: o.prompt,
      events,
      cancel: (reason?: string) =>
        this.#real
          ? this.#real.cancel(reason)
          : this.#end('cancelled', {
              code: ErrorCodes.REQUEST_CANCELLED,
              message: reason ?? 'cancelled by the client',
            }),
      pause: () => (this.#real ? this.#real.pause() : (this.#paused = true)),
      resume: () => (this.#real ? this.#real.resume() : (this.#paused = false)),
    };
  }

  /** A stage instance became ready: admits the request if its plan is servable now. */
  retry(): void {
    if (this.#real || this.#done) return;
    let real: RequestHandle;
    try {
      real = this.o.admit();
    } catch (err) {
      if (err instanceof ChorusError && err.code === ErrorCodes.OVERLOADED) return; // another stage still restarts
      this.#end('error', serializeError(err));
      return;
    }
    this.#real = real;
    this.#settle();
    if (this.#paused) real.pause();
    for (const s of this.#subscribers) real.events.subscribe(s);
    this.#subscribers.clear();
  }

  /** The engine is closing: the request ends as it would have been refused. */
  abandon(error: SerializedError): void {
    if (!this.#real) this.#end('error', error);
  }

  #end(finishReason: 'error' | 'cancelled', error: SerializedError): void {
    if (this.#real || this.#done) return;
    const { prompt } = this.o;
    const usage = {
      promptTokens: prompt.text + prompt.audio + prompt.image + prompt.video,
      promptTokenDetails: prompt,
      completionTokens: 0,
      audioFrames: 0,
      audioSeconds: 0,
    };
    this.#done = { type: 'done', finishReason, error, usage, atMs: Date.now() };
    this.#settle();
    for (const s of this.#subscribers) {
      s.next(this.#done);
      s.complete();
    }
    this.#subscribers.clear();
  }

  #settle(): void {
    clearTimeout(this.#timer);
    this.o.settled();
  }
}

/** The requests waiting for a restarting stage (each a PendingAdmission), and the rule that makes one wait. */
export class PendingAdmissions {
  readonly #waiting = new Set<PendingAdmission>();

  constructor(
    private readonly o: {
      readonly graph: StageGraph;
      readonly health: () => readonly StageHealth[];
      readonly log: Logger;
    },
  ) {}

  /**
   * `err` refused the request. OVERLOADED while a stage it needs is (re)starting and expected back within
   * chunk_timeout_ms: the request waits for it (its handle now, `admit` retried on each READY); otherwise `err`
   * stands (thrown).
   */
  wait(
    err: unknown,
    requestId: string,
    request: GenerateRequest,
    prompt: PreparedPrompt,
    admit: () => RequestHandle,
  ): RequestHandle {
    if (err instanceof RowsWait) return this.#waitForRows(err, requestId, prompt, admit);
    if (!(err instanceof ChorusError) || err.code !== ErrorCodes.OVERLOADED) throw err;
    const needs = routedStages(this.o.graph, request, prompt).map((s) => s.stageId);
    const wait = restartWait(needs, this.o.health());
    const { chunkTimeoutMs } = this.o.graph.chunkPolicy;
    if (!wait || wait.waitMs > chunkTimeoutMs) throw err;
    const pending: PendingAdmission = new PendingAdmission({
      requestId,
      prompt: promptTokensOf(prompt),
      deadlineMs: Date.now() + chunkTimeoutMs,
      waitingFor: `a ready instance of ${wait.stages.join(', ')}`,
      admit,
      settled: () => this.#waiting.delete(pending),
    });
    this.#waiting.add(pending);
    this.o.log.info(
      { requestId, stages: wait.stages, expectedMs: wait.waitMs },
      'request waits for a restarting stage',
    );
    return pending.handle;
  }

  /** No Thinker instance has room for the request's media rows now: it waits for a release (retry()). */
  #waitForRows(err: RowsWait, requestId: string, prompt: PreparedPrompt, admit: () => RequestHandle): RequestHandle {
    const { chunkTimeoutMs } = this.o.graph.chunkPolicy;
    const pending: PendingAdmission = new PendingAdmission({
      requestId,
      prompt: promptTokensOf(prompt),
      deadlineMs: Date.now() + chunkTimeoutMs,
      waitingFor: `room for its media rows (${err.bytes} bytes; engine.media_rows_bytes ${err.budgetBytes})`,
      admit,
      settled: () => this.#waiting.delete(pending),
    });
    this.#waiting.add(pending);
    diagnostics.mediaRows.publish({ event: 'wait' });
    this.o.log.info({ requestId, bytes: err.bytes }, 'request waits for room for its media rows');
    return pending.handle;
  }

  /**
   * An instance is READY, or media rows were released: each waiting request tries again, once the pool has filed it
   * (a remote one joins after).
   */
  retry(): void {
    queueMicrotask(() => [...this.#waiting].forEach((p) => p.retry()));
  }

  /** A waiting request holds its id too (it has no record until admitted). */
  holds(requestId: string): boolean {
    return [...this.#waiting].some((p) => p.handle.requestId === requestId);
  }

  /** The engine is closing: every waiting request ends as it would have been refused. */
  abandonAll(error: SerializedError): void {
    for (const p of [...this.#waiting]) p.abandon(error);
  }
}
