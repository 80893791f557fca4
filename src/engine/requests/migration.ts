/**
 * The bookkeeping of a request migration, pure (no clock, no I/O): whether a request lost with a stage instance may
 * be replayed, the name of each replay on the wire, and which of a replay's outputs the client already has.
 *
 * A replay reruns the request's whole pipeline from its prompt on live instances (a restarted replica, another one),
 * under a new run id so that nothing of the lost run (chunks still in the rings, a late `finished`, an abort's
 * acknowledgement) can reach it. What each stage needs to resume is then what it needed the first time: the Thinker
 * its prompt (its prefix cache makes the prefill cheap when it survived), the Talker the Thinker's rows, Code2Wav the
 * Talker's frames; none keeps anything of the lost run. The determinism invariant (DESIGN.md: greedy, or sampled
 * from a seed per position, gives the same tokens, frames and samples at any batch and chunking) makes the replay's
 * output the lost run's, token for token and sample for sample (within one pcm16 step), so main skips what it had
 * already delivered and the client sees a pause. Every request is reproducible: sampling always has a seed (the
 * stage's default_sampling_params.seed when the client gives none, stages/sampling/sampleToken.ts), so no replay ever
 * resamples what the client heard.
 */
import type { MigrationSettings } from '../../common/graph.ts';

/** Why the request's instance was given up: its process died, the hang watch replaced it, or a remote one was lost. */
export type MigrationReason = 'died' | 'hung' | 'lost';

export interface MigrationInput {
  /** The settings of the stage that lost the request (null: migration off there). */
  readonly settings: MigrationSettings | null | undefined;
  /** Replays the request already took. */
  readonly attempts: number;
  /**
   * Tokens the replay must produce again before it gets past what the client has (the answer's length so far). Its
   * media need nothing: a replay takes an item's rows from the encoder-output store, or has it encoded again from
   * the bytes main holds (the same rows: encoders are deterministic).
   */
  readonly answerTokens: number;
}

export type MigrationVerdict = { readonly migrate: true } | { readonly migrate: false; readonly why: string };

export function migrationVerdict(a: MigrationInput): MigrationVerdict {
  const s = a.settings;
  if (!s) return { migrate: false, why: 'migration is off for this stage (engine.migration)' };
  if (a.attempts >= s.maxAttempts)
    return { migrate: false, why: `it was migrated ${a.attempts} times already (engine.migration.max_attempts)` };
  if (a.answerTokens > s.maxReplayTokens)
    return {
      migrate: false,
      why:
        `its answer had ${a.answerTokens} tokens, more than engine.migration.max_replay_tokens ` +
        `(${s.maxReplayTokens}) to replay`,
    };
  return { migrate: true };
}

/**
 * The run id of a request's replay number `attempt` (0: the request's own id). `~` is outside the characters a
 * client's id may use (validateRequest.ts), so a run id never names another request.
 */
export function runIdOf(requestId: string, attempt: number): string {
  return attempt === 0 ? requestId : `${requestId}~${attempt}`;
}

/** The request id a run id belongs to. */
export function requestIdOfRun(runId: string): string {
  const at = runId.lastIndexOf('~');
  return at < 0 ? runId : runId.slice(0, at);
}

/**
 * What a replay's outputs hold that the client already has: the first `deliveredTokens` text tokens and
 * `deliveredSamples` audio samples of the replay are the lost run's, delivered before it was lost. Chunks are
 * counted as they come (the replay may cut its text and audio into other chunks than the lost run did).
 */
export class ReplayCursor {
  #seenTokens = 0;
  #seenSamples = 0;

  constructor(
    readonly deliveredTokens: number,
    readonly deliveredSamples: number,
  ) {}

  /** The chunk's tokens the client does not have yet. */
  newTokens(tokenIds: readonly number[]): readonly number[] {
    const skip = Math.max(0, Math.min(tokenIds.length, this.deliveredTokens - this.#seenTokens));
    this.#seenTokens += tokenIds.length;
    return skip === 0 ? tokenIds : tokenIds.slice(skip);
  }

  /** The chunk's samples the client does not have yet (a view: the caller copies). */
  newSamples(pcm: Float32Array): Float32Array {
    const skip = Math.max(0, Math.min(pcm.length, this.deliveredSamples - this.#seenSamples));
    this.#seenSamples += pcm.length;
    return skip === 0 ? pcm : pcm.subarray(skip);
  }

  /** Whether the replay has reached what the client did not have: everything it outputs from now on is new. */
  get caughtUp(): boolean {
    return this.#seenTokens >= this.deliveredTokens && this.#seenSamples >= this.deliveredSamples;
  }
}

/**
 * The tokens a replay redoes before it gets past what the client has: the text tokens delivered, or, for an answer
 * without text out, the tokens behind the audio delivered.
 */
export function answerTokensOf(
  delivered: { readonly tokens: number; readonly samples: number },
  audio: { readonly samplesPerFrame: number; readonly framesPerToken: number | null } | null,
): number {
  const perToken = audio && audio.framesPerToken ? audio.samplesPerFrame * audio.framesPerToken : 0;
  return Math.max(delivered.tokens, perToken > 0 ? Math.ceil(delivered.samples / perToken) : 0);
}

/** A stage of a migrating request, as the wait for its replay reads it. */
export interface WaitedStage {
  readonly stageId: string;
  readonly placement: 'local' | 'remote';
  /** Whether an instance may join it over Redis (`chorus stage --stage <id>`). */
  readonly joinable: boolean;
}

/** The stages among `stageIds` with no ready instance (the replay waits for one of each). */
export function stagesWithoutReady(
  stageIds: Iterable<string>,
  instances: Iterable<{ readonly spec: { readonly stageId: string }; readonly status: string }>,
): string[] {
  const ready = new Set<string>();
  for (const view of instances) if (view.status === 'ready') ready.add(view.spec.stageId);
  return [...stageIds].filter((id) => !ready.has(id));
}

/**
 * Why a migrating request waited out its deadline (`setting` names it), and the fix: the stages that had no ready
 * instance and how to give them one, or, when each had one, why its replay was last not admitted (`notAdmitted`).
 */
export function waitedOutWhy(
  waitMs: number,
  setting: string,
  missing: readonly WaitedStage[],
  notAdmitted: string | null = null,
): string {
  const waited = `waited ${(waitMs / 1000).toFixed(1)} s (${setting})`;
  if (missing.length === 0)
    return (
      `${waited}: every stage it runs on had a ready instance at the end, but its replay was not admitted ` +
      `(${notAdmitted ?? 'no READY woke it while it waited'})`
    );
  const names = missing.map((s) => s.stageId).join(', ');
  const fixes = missing.map((s) => {
    const join = `chorus stage --config <file> --stage ${s.stageId} on a host of this deployment`;
    if (s.placement === 'remote') return `start an instance of stage ${s.stageId} (${join})`;
    const restart = `its replicas here did not come back (restarting or failed: see the log)`;
    return s.joinable
      ? `start an instance of stage ${s.stageId}: ${restart}, or ${join}`
      : `stage ${s.stageId}: ${restart}; restart the server`;
  });
  return `${waited} and no instance of stage ${names} became ready: ${fixes.join('; ')}`;
}
