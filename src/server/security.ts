/**
 * The Host allow-list (DNS rebinding), the browser Origin allow-list and bearer-token auth, as one onRequest hook
 * that runs for plain HTTP and for the WebSocket upgrade alike (so a rejected upgrade gets an ordinary 421/403/401
 * response, never a socket).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { replyError } from './httpErrors.ts';
import type { ResolvedServerOptions } from './options.ts';
import { playgroundScripts } from './playgroundFiles.ts';
import { hostAllowed, hostnameOf, hostPolicy, originAllowed } from './hostCheck.ts';

/** Browsers cannot set headers on a WebSocket, so OpenAI's browser SDK sends the key as this subprotocol. */
export const KEY_SUBPROTOCOL_PREFIX = 'openai-insecure-api-key.';

/** Routes a browser must reach before it can know the key: the playground page and its scripts, liveness probes. */
function publicRoutes(): Set<string> {
  const scripts = [...playgroundScripts().keys()].map((urlPath) => `GET ${urlPath}`);
  return new Set(['GET /', 'GET /health', 'HEAD /', 'HEAD /health', ...scripts]);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * The configured key a presented one matches, or null. Constant-time per key (over digests, so lengths never leak
 * either), and every key is compared, so the time says nothing of which one matched.
 */
function matchingKey(candidate: string, keys: readonly { key: string; digest: Buffer }[]): string | null {
  const presented = digest(candidate);
  let found: string | null = null;
  for (const k of keys) if (timingSafeEqual(presented, k.digest) && found === null) found = k.key;
  return found;
}

/** The key each authenticated request came with (its cache partition: cachePartition.ts). */
const requestKeys = new WeakMap<FastifyRequest, string>();

/** The API key the request was let in with; null when the server asks for none. */
export function apiKeyOf(request: FastifyRequest): string | null {
  return requestKeys.get(request) ?? null;
}

export function offeredSubprotocols(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function presentedKeys(request: FastifyRequest): string[] {
  const keys: string[] = [];
  const auth = request.headers.authorization;
  if (auth?.startsWith('Bearer ')) keys.push(auth.slice('Bearer '.length).trim());
  for (const protocol of offeredSubprotocols(request.headers['sec-websocket-protocol'])) {
    if (protocol.startsWith(KEY_SUBPROTOCOL_PREFIX)) keys.push(protocol.slice(KEY_SUBPROTOCOL_PREFIX.length));
  }
  return keys;
}

/** A header value as it may appear in a message and a log line: quoted, and not a megabyte of it. */
function shown(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value);
}

export function securityHook(options: ResolvedServerOptions) {
  const keys = options.apiKeys.map((key) => ({ key, digest: digest(key) }));
  const publicRouteKeys = publicRoutes();
  const hosts = hostPolicy(options.host, options.allowedHosts);

  return async function onRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // First, on every route and on the WebSocket upgrade: a rebound page must get nothing, not even /health.
    const host = request.headers.host;
    if (!hostAllowed(host, hosts)) {
      const err = new ChorusError(
        ErrorCodes.FORBIDDEN_HOST,
        `Host ${shown(host ?? '')} is not a name this server answers to (a page can point a name it controls at ` +
          `this machine: DNS rebinding). Reach it as localhost or 127.0.0.1, or start it with --allowed-hosts ` +
          `${hostnameOf(host ?? '')?.slice(0, 100) ?? 'NAME'} if that is its name`,
      );
      request.log.warn({ host: shown(host ?? ''), url: request.url }, 'rejected host');
      const [status, body] = replyError(err);
      return reply.code(status).send(body);
    }
    const origin = request.headers.origin;
    if (origin !== undefined) {
      if (!originAllowed(origin, options.allowedOrigins, hosts, request.socket.localPort)) {
        const err = new ChorusError(
          ErrorCodes.FORBIDDEN_ORIGIN,
          `origin ${shown(origin)} is not allowed: start the server with --allowed-origin ORIGIN (the page's ` +
            `scheme://host:port)`,
        );
        request.log.warn({ origin, url: request.url }, 'rejected origin');
        const [status, body] = replyError(err);
        return reply.code(status).send(body);
      }
      // Cross-origin pages that are allowed need CORS headers to read responses and to send Authorization.
      reply.header('access-control-allow-origin', origin);
      reply.header('vary', 'Origin');
      if (request.method === 'OPTIONS') {
        reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
        reply.header('access-control-allow-headers', 'authorization, content-type');
        reply.header('access-control-max-age', '600');
        return reply.code(204).send();
      }
    }
    if (keys.length === 0 || request.method === 'OPTIONS') return;
    const routeKey = `${request.method} ${request.url.split('?')[0]}`;
    if (publicRouteKeys.has(routeKey)) return;
    for (const presented of presentedKeys(request)) {
      const key = matchingKey(presented, keys);
      if (key === null) continue;
      requestKeys.set(request, key);
      return;
    }
    const [status, body] = replyError(
      new ChorusError(ErrorCodes.UNAUTHORIZED, 'missing or wrong API key: send "Authorization: Bearer <key>"'),
    );
    reply.header('www-authenticate', 'Bearer');
    return reply.code(status).send(body);
  };
}

/**
 * Chooses the subprotocol to echo on the upgrade. Browsers fail the handshake when they offered protocols and
 * the server picks none, so echo "realtime" when offered; never echo the key back unless it is all there is.
 */
export function chooseSubprotocol(protocols: Set<string>): string | false {
  if (protocols.has('realtime')) return 'realtime';
  for (const p of protocols) if (!p.startsWith(KEY_SUBPROTOCOL_PREFIX)) return p;
  const first = protocols.values().next();
  return first.done ? false : first.value;
}
