/**
 * How long a connection may hold the server: the time a request may take to arrive, and what shutdown does to the
 * WebSockets. Before these, a partial body was held open for over 340 s (Node's 300 s request timeout, checked
 * every 30 s), and sessions ended with 1005 (no status) when the server closed.
 */
import type { ServerOptions as HttpServerOptions } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { ResolvedServerOptions } from './options.ts';

/** Node's http(s) server options for the request and headers timeouts (408 and a closed socket past them). */
export function requestTimeouts(options: ResolvedServerOptions): HttpServerOptions {
  const requestTimeout = options.requestTimeoutMs;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs, requestTimeout);
  // Node looks for expired requests only this often (default 30 s): a quarter of the shorter timeout keeps a cut
  // within 25% of it; the sweep over open connections is cheap.
  const connectionsCheckingInterval = Math.min(5000, Math.max(100, Math.floor(headersTimeout / 4)));
  return { requestTimeout, headersTimeout, connectionsCheckingInterval };
}

/** Close code for "the server is going away" (RFC 6455 7.4.1): clients reconnect elsewhere or later. */
export const GOING_AWAY = 1001;

/**
 * On close, every WebSocket is closed with 1001 and a reason, before @fastify/websocket's own preClose closes them
 * with no status (1005, which clients cannot tell from a broken connection). Must be added before that plugin
 * registers, so that this hook runs first.
 */
export function closeSocketsGoingAway(app: FastifyInstance): void {
  app.addHook('preClose', (done) => {
    const server = (
      app as FastifyInstance & { websocketServer?: { clients: Set<{ close(c: number, r: string): void }> } }
    ).websocketServer;
    for (const client of server?.clients ?? []) client.close(GOING_AWAY, 'server shutting down');
    done();
  });
}
