/**
 * What makes one Realtime session resumable (docs/realtime-resume.md): its token in the server's registry, the log of
 * the events it sent (ReplayLog), and the window it waits for its client once the socket has dropped. RealtimeSession
 * owns the socket and decides when to wait; this owns the token, the clock and what a resuming client is owed.
 */
import type { RealtimeResumeSettings } from '../../common/realtimeSettings.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';
import { ReplayLog, type LoggedEvent } from './ReplayLog.ts';
import type { ResumableSessions, ResumeTarget } from './ResumableSessions.ts';
import { newId } from './serverEvents.ts';
import type { SessionResumeEnabledEvent } from './ServerEvent.ts';

/**
 * The session a session.resume names, for the connection `self` whose first event it is (`pristine`): this
 * connection carries it from then on. Throws what the client must fix otherwise.
 */
export function resumeTarget<T extends ResumeTarget>(
  registry: ResumableSessions<T>,
  resume: { readonly token: string; readonly principal: string | null },
  self: T,
  pristine: boolean,
): T {
  if (!pristine)
    throw new ClientInputError(
      'session.resume must come before any other event on a connection: open a new connection to resume',
      'type',
    );
  const target = registry.find(resume.token, resume.principal);
  if (!target || target === self)
    throw new ChorusError(
      ErrorCodes.RESUME_TOKEN_INVALID,
      'no session to resume with that resume_token for this API key: it was never issued to this key, or its ' +
        'session has ended (closed, or its socket dropped longer ago than the resume window): open a new session',
    );
  return target;
}

/** A socket closed with 1000 was closed on purpose by the client: its session ends at once. */
const NORMAL_CLOSURE = 1000;

export class SessionResume {
  readonly log: ReplayLog;
  readonly token: string;
  readonly #settings: RealtimeResumeSettings;
  readonly #registry: ResumableSessions;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    settings: RealtimeResumeSettings,
    registry: ResumableSessions,
    principal: string | null,
    target: ResumeTarget,
  ) {
    this.#settings = settings;
    this.#registry = registry;
    this.log = new ReplayLog(settings.bufferBytes);
    this.token = registry.issue(principal, target);
  }

  /** Whether a socket that closed with `code` leaves its session waiting for a resume. */
  waitsAfter(code: number): boolean {
    return code !== NORMAL_CLOSURE && !this.#registry.closing;
  }

  enabledEvent(): SessionResumeEnabledEvent {
    return {
      type: 'session.resume.enabled',
      event_id: newId('event'),
      resume_token: this.token,
      window_ms: this.#settings.windowMs,
      buffer_bytes: this.#settings.bufferBytes,
    };
  }

  /** The socket dropped: `onExpired` ends the session unless a client resumes it within the window. */
  waitFor(onExpired: () => void): void {
    this.#stopClock();
    this.#timer = setTimeout(onExpired, this.#settings.windowMs);
    this.#timer.unref(); // a session waiting for its client does not keep a closing process alive
  }

  /**
   * The events a client that has every event up to `lastSeq` missed. Throws a ClientInputError for a lastSeq the
   * session never reached (the session is untouched: the client may try again), and CHORUS_ERR_RESUME_GAP when some
   * of them are no longer held (the caller ends the session: it cannot go on whole).
   */
  missedSince(lastSeq: number): readonly LoggedEvent[] {
    const replay = this.log.since(lastSeq);
    if (replay.kind === 'ahead')
      throw new ClientInputError(
        `last_seq ${lastSeq} is past the last event this session sent (${replay.lastSeq}): send the chorus_seq of ` +
          `the last event your client received`,
        'last_seq',
      );
    if (replay.kind === 'gap')
      throw new ChorusError(
        ErrorCodes.RESUME_GAP,
        `the events after ${lastSeq} are no longer held (this server keeps the last ${this.#settings.bufferBytes} ` +
          `bytes of events, from ${replay.oldestSeq} now), so the session cannot continue whole and was ended: open ` +
          `a new session (the server's operator sets realtime.resume_buffer_bytes)`,
      );
    return replay.events;
  }

  /** A client resumed: the clock stops. */
  resumed(): void {
    this.#stopClock();
  }

  /** The session is over: its token dies with it. */
  end(): void {
    this.#stopClock();
    this.#registry.revoke(this.token);
  }

  #stopClock(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
