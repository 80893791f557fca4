/**
 * The server's resumable Realtime sessions by resume token (session.resume, docs/realtime-resume.md). A token is 32
 * random bytes shown once to its client; the server keeps only its SHA-256, next to the API key the session was
 * opened with (as a digest too), and answers a resume only for the same key: another tenant that learns a token gets
 * the same "unknown token" as for a made-up one. A token dies with its session (closed, or dropped longer than the
 * resume window), and every session still held is ended when the server closes, so nothing outlives it.
 */
import { createHash, randomBytes } from 'node:crypto';

/** What the registry needs of a session: to be ended for good (server shutdown). */
export interface ResumeTarget {
  end(): void;
}

interface Entry<T extends ResumeTarget> {
  readonly principal: string | null;
  readonly session: T;
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url');

/** Who may resume: a digest of the API key the socket was opened with (null: the server asks for no key). */
export function resumePrincipal(apiKey: string | null): string | null {
  return apiKey === null ? null : digest(`chorus resume principal\0${apiKey}`);
}

export class ResumableSessions<T extends ResumeTarget = ResumeTarget> {
  readonly #byToken = new Map<string, Entry<T>>();
  #closing = false;

  /** The server is closing: sockets that drop now end their sessions instead of waiting for a resume. */
  get closing(): boolean {
    return this.#closing;
  }

  get size(): number {
    return this.#byToken.size;
  }

  /** A new token for `session`, resumable by clients presenting `principal`'s key. */
  issue(principal: string | null, session: T): string {
    const token = randomBytes(32).toString('base64url');
    this.#byToken.set(digest(token), { principal, session });
    return token;
  }

  /** The session `token` names, if the client presenting `principal` may resume it; null otherwise. */
  find(token: string, principal: string | null): T | null {
    const entry = this.#byToken.get(digest(token));
    return entry && entry.principal === principal ? entry.session : null;
  }

  revoke(token: string): void {
    this.#byToken.delete(digest(token));
  }

  /** Ends every session held (each revokes its own token as it ends). */
  shutdown(): void {
    this.#closing = true;
    for (const { session } of [...this.#byToken.values()]) session.end();
  }
}
