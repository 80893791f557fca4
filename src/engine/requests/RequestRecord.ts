/**
 * Everything main keeps for one live request, in one place: its output stream, whether its client paused it, its
 * first-packet hold, what routing counted for it, its media routes (what an encoder failure costs it), and the
 * handles to free what the EC store and the adapter keep under its id. release() frees all of it at once, when
 * the request ends however it ends; nothing else in the engine is keyed by request id (RequestRegistry.ts).
 *
 * Its membership in the stage instances' in-flight sets is the pool's (src/engine/pool/StageInstance.ts): it ends
 * with the instance's `finished`, which may come after the request ended (the stage works on until it reads the
 * abort), and until then the instance still counts it as load and watches it for a hang.
 */
import type { ChatMessage, GenerateRequest } from '../../common/engine.ts';
import type { SerializedError } from '../../common/errors.ts';
import { encoderFailure, type EncoderFailureOutcome, type EncoderRoutes } from '../MediaRoutes.ts';
import type { RequestStream } from '../RequestStream.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import type { RouteTicket } from '../routing/Router.ts';
import { runIdOf, type MigrationReason } from './migration.ts';

/** What the request holds outside the record, each freed by its id. */
export interface RecordParts {
  /** What a replay admits again: the request and its prepared prompt. */
  readonly request: GenerateRequest;
  readonly prompt: PreparedPrompt;
  readonly route: RouteTicket | null;
  readonly media: EncoderRoutes | null;
  /** The EC store's pins on the request's hits (null without a store). */
  readonly ec: { release(requestId: string): void } | null;
  /** The adapter's receive state for the request's outputs. */
  readonly adapter: { cancel(requestId: string): void };
}

export class RequestRecord {
  /**
   * Paused for its client: it holds no batch slot in the stages, so it is not load either (16 paused readers
   * counted as load made every other first chunk 25 frames instead of 2, and turned its hold off).
   */
  paused = false;
  /** Tells the Thinker to go on: set while its first-packet hold lasts. */
  #hold: ((audioOut: boolean) => void) | null = null;
  #route: RouteTicket | null;
  /** Replays taken (requests/migration.ts): the current run is number `attempts`. */
  attempts = 0;
  /** Set from the loss of an instance until the replay is admitted (it waits for live instances of its stages). */
  migrating: PendingMigration | null = null;
  /** Runs of it that encoded an item again (Reencodes.ts), among its `attempts`. */
  reencodes = 0;
  /** Its runs may leave unencoded the items their Thinker holds the KV of (heldItems.ts): false once that was wrong. */
  skipHeld = true;
  /** The messages its current run's prompt was built from (its clips as served); a re-encode steps down from them. */
  messages: readonly ChatMessage[];
  /** Sends the adds that wait for its first output (stageAdds.ts addsAfterFirstOutput), once; null: none wait. */
  #laterAdds: (() => void) | null = null;

  constructor(
    readonly stream: RequestStream,
    private parts: RecordParts,
  ) {
    this.#route = parts.route;
    this.messages = parts.request.messages;
  }

  get requestId(): string {
    return this.stream.requestId;
  }

  /** The id of its current run on the stages and edges: the request's own, or a replay's (migration.ts runIdOf). */
  get runId(): string {
    return runIdOf(this.requestId, this.attempts);
  }

  get request(): GenerateRequest {
    return this.parts.request;
  }

  get prompt(): PreparedPrompt {
    return this.parts.prompt;
  }

  /**
   * Starts waiting for a replay: the lost run's receive state is let go (its late chunks are dropped), routing
   * forgets it; its deadline (stopped by `cancelDeadline`) ends it if no replay is admitted in time.
   */
  startMigration(pending: Omit<PendingMigration, 'cancelDeadline'>, cancelDeadline: () => void): void {
    this.parts.adapter.cancel(this.runId);
    this.#route?.release();
    this.#route = null;
    this.#hold = null; // the replay holds for nothing: its Thinker is told no first audio
    this.migrating = { ...pending, cancelDeadline };
  }

  /**
   * Runs it again as run `attempts + 1` (an item encoded again: Reencodes.ts), from `messages` and their `prompt`,
   * routed by `route`: the failed run's receive state is let go (its late chunks are dropped) and its route released.
   */
  rerun(next: {
    readonly messages: readonly ChatMessage[];
    readonly prompt: PreparedPrompt;
    readonly media: EncoderRoutes | null;
    readonly route: RouteTicket | null;
  }): void {
    this.parts.adapter.cancel(this.runId);
    this.#route?.release();
    this.#route = next.route;
    this.#hold = null;
    this.parts = { ...this.parts, prompt: next.prompt, media: next.media, route: next.route };
    this.messages = next.messages;
    this.attempts++;
    this.reencodes++;
  }

  /** The replay is admitted as run `attempts + 1`, routed by `route`. */
  replayed(route: RouteTicket | null): void {
    this.migrating?.cancelDeadline();
    this.migrating = null;
    this.attempts++;
    this.#route = route;
  }

  /** `send` sends the adds that wait for the run's first output at main: then, or before any other message. */
  addsAfterFirstOutput(send: () => void): void {
    this.#laterAdds = send;
  }

  /** The adds that wait go now (its first output came, or main is about to tell its stages something else). */
  sendLaterAdds(): void {
    const send = this.#laterAdds;
    this.#laterAdds = null;
    send?.();
  }

  /** Stage id -> the instance that runs the request there. */
  get instances(): ReadonlyMap<string, string> {
    return this.stream.stageInstances;
  }

  /**
   * The Thinker holds until the first audio (or audio that ends without any): `release` tells it to go on, and
   * whether the audio is out (false: load arrived first).
   */
  holdUntilFirstAudio(release: (audioOut: boolean) => void): void {
    this.#hold = release;
    this.stream.onAudioStarted = () => this.releaseHold(true);
  }

  /** Ends the hold, once: its first audio came (`audioOut`), or load arrived. */
  releaseHold(audioOut = false): void {
    const release = this.#hold;
    this.#hold = null;
    release?.(audioOut);
  }

  get held(): boolean {
    return this.#hold !== null;
  }

  /** What an encoder instance's failure costs the request (null: none of its items are there). */
  encoderFailure(instance: string, error: SerializedError): EncoderFailureOutcome | null {
    return this.parts.media && encoderFailure(this.parts.media, instance, error);
  }

  firstToken(atMs: number): void {
    this.#route?.firstToken(atMs);
  }

  firstAudio(atMs: number): void {
    this.parts.route?.firstAudio(atMs);
  }

  encoderFinished(instance: string, atMs: number): void {
    this.#route?.encoderFinished(instance, atMs);
  }

  /** The request ended: its stages dropped it (nothing to tell), and main lets go of everything it kept. */
  release(): void {
    this.#hold = null;
    this.migrating?.cancelDeadline();
    this.migrating = null;
    this.#route?.release();
    this.parts.ec?.release(this.requestId);
    this.parts.adapter.cancel(this.runId);
  }
}

/** A request between the loss of an instance and its replay's admission. */
export interface PendingMigration {
  readonly stageId: string;
  readonly lostInstance: string;
  readonly reason: MigrationReason;
  /** The lost instance's error: the request ends with it (and why) if the replay cannot be admitted. */
  readonly error: SerializedError;
  readonly lostAtMs: number;
  /** Stops its give-up deadline (the replay was admitted, or the request ended). */
  readonly cancelDeadline: () => void;
}
