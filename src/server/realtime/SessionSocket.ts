/**
 * The socket of one Realtime session, and what lets the session outlive it (docs/realtime-resume.md): the frames and
 * the close of whichever socket the session has now, a resumable session's wait for its client once that socket has
 * dropped, and the take-over by a client's new connection (session.resume). RealtimeSession handles the frames and
 * owns everything else; this only decides which socket it talks to, and when the session is over.
 */
import type { RawData, WebSocket } from 'ws';
import type { FastifyBaseLogger } from 'fastify';
import type { RealtimeResumeSettings } from '../../common/realtimeSettings.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { ResumableSessions, ResumeTarget } from './ResumableSessions.ts';
import { newId } from './serverEvents.ts';
import type { SessionResource } from './SessionResource.ts';
import type { SessionResumeEnabledEvent, SessionResumedEvent } from './ServerEvent.ts';
import { SessionResume } from './SessionResume.ts';
import type { SocketWriter } from './SocketWriter.ts';

export interface SessionSocketHooks {
  readonly sessionId: string;
  readonly log: FastifyBaseLogger;
  readonly onFrame: (data: RawData, isBinary: boolean) => void;
  /** The session is over: its socket closed for good, or its resume window passed. Called once. */
  readonly onEnded: () => void;
}

/** A socket closed because another connection resumed its session. */
const RESUMED_ELSEWHERE = 4001;

export class SessionSocket {
  readonly #writer: SocketWriter;
  readonly #hooks: SessionSocketHooks;
  /** Null while a resumable session waits for its client. */
  #ws: WebSocket | null = null;
  #resume: SessionResume | null = null;
  #ended = false;

  constructor(ws: WebSocket, writer: SocketWriter, hooks: SessionSocketHooks) {
    this.#writer = writer;
    this.#hooks = hooks;
    this.#bind(ws);
  }

  /** The socket the session talks to now (null: waiting for a resume). */
  get ws(): WebSocket | null {
    return this.#ws;
  }

  readonly #onMessage = (data: RawData, isBinary: boolean): void => this.#hooks.onFrame(data, isBinary);

  /** A resumable session waits for its client (resume window); any other ends with its socket. */
  readonly #onClose = (code: number): void => {
    if (!this.#resume?.waitsAfter(code)) return this.#end();
    this.#release();
    this.#resume.waitFor(() => this.end(1001, 'resume window passed'));
    this.#hooks.log.debug({ sessionId: this.#hooks.sessionId }, 'realtime socket dropped: waiting for a resume');
  };

  /** session.resume.enable: numbers every event from now on, and registers the session under a new token. */
  enableResume(
    settings: RealtimeResumeSettings,
    registry: ResumableSessions,
    principal: string | null,
    target: ResumeTarget,
  ): SessionResumeEnabledEvent {
    if (settings.windowMs === 0)
      throw new ChorusError(
        ErrorCodes.PARAM_UNSUPPORTED,
        'session resume is off on this server (its config sets realtime.resume_window_ms: 0)',
      );
    if (!this.#resume) {
      this.#resume = new SessionResume(settings, registry, principal, target);
      this.#writer.numberWith(this.#resume.log);
    }
    return this.#resume.enabledEvent();
  }

  /**
   * A client's new connection `ws` takes the session over: session.resumed, then the events after `lastSeq` in their
   * order, then whatever comes next. A socket the session still holds (its client left it without a close the server
   * saw) is closed. Throws, with the session as it was, for a lastSeq it never reached; ends the session and throws
   * CHORUS_ERR_RESUME_GAP when some of those events are gone.
   */
  takeOver(ws: WebSocket, lastSeq: number, session: SessionResource): void {
    const resume = this.#resume!;
    let missed;
    try {
      missed = resume.missedSince(lastSeq);
    } catch (err) {
      if (err instanceof ChorusError && err.code === ErrorCodes.RESUME_GAP) this.end(1001, 'events lost');
      throw err;
    }
    this.#release()?.close(RESUMED_ELSEWHERE, 'resumed on another connection');
    resume.resumed();
    const resumed: SessionResumedEvent = {
      type: 'session.resumed',
      event_id: newId('event'),
      session,
      last_seq: lastSeq,
      replayed: missed.length,
    };
    ws.send(JSON.stringify(resumed)); // not numbered: it belongs to this connection, not to the session's history
    this.#writer.attach(ws, missed);
    this.#bind(ws);
    this.#hooks.log.debug(
      { sessionId: this.#hooks.sessionId, lastSeq, replayed: missed.length },
      'realtime session resumed',
    );
  }

  /** This connection's socket now carries another session: let go of it without closing it, and end. */
  handOver(): void {
    this.#release();
    this.#end();
  }

  /** Ends the session for good, closing its socket if it has one. */
  end(code: number, reason: string): void {
    this.#release()?.close(code, reason);
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resume?.end();
    this.#hooks.onEnded();
  }

  #bind(ws: WebSocket): void {
    this.#ws = ws;
    ws.on('message', this.#onMessage);
    ws.on('close', this.#onClose);
  }

  /** Lets go of the socket without closing it; returns it. */
  #release(): WebSocket | null {
    const ws = this.#ws;
    ws?.off('message', this.#onMessage);
    ws?.off('close', this.#onClose);
    this.#ws = null;
    this.#writer.detach();
    return ws;
  }
}
