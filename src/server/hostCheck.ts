/**
 * Which Host names and which Origins are this server's own. DNS rebinding: a page on a name the attacker controls
 * (evil.example), resolved to 127.0.0.1 after it loaded, is same-origin with itself, so the browser lets it read
 * what it sends to this server; only its Host header (evil.example) gives it away. So every request's Host must be
 * a name this server answers to, and an Origin is ours only when it names one of those at the port we serve on,
 * never because it matches the Host (which the attacker's page chooses). Same class as Ollama's CVE-2024-28224.
 */
import { hostname, networkInterfaces } from 'node:os';

/** Loopback names cannot be pointed elsewhere by a remote attacker: browsers resolve them to this machine. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '']);

export interface HostPolicy {
  /** '*' was configured: any Host (a proxy in front checks it). */
  readonly anyHost: boolean;
  /** Normalised host names (lowercase, IPv6 without brackets, no trailing dot). */
  readonly names: ReadonlySet<string>;
}

/**
 * The names of a server bound to `bindHost`: the loopback names, the bound host itself, and the `allowedHosts`.
 * Bound to every interface, the machine's own addresses (read now) and host name too: a client that names the server
 * by the address it reached it at (a health probe, `curl http://10.0.0.5:8000`) is not being rebound, and an attacker
 * cannot make a page's origin this machine's own name.
 */
export function hostPolicy(bindHost: string, allowedHosts: readonly string[]): HostPolicy {
  const names = new Set(LOOPBACK_NAMES);
  if (!WILDCARD_BINDS.has(bindHost)) names.add(normalize(bindHost));
  else {
    names.add(normalize(hostname()));
    for (const addresses of Object.values(networkInterfaces()))
      for (const a of addresses ?? []) if (!a.address.includes('%')) names.add(normalize(a.address));
  }
  for (const host of allowedHosts) if (host !== '*') names.add(normalize(host));
  return { anyHost: allowedHosts.includes('*'), names };
}

function normalize(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), normalised; null when it is not one. */
export function hostnameOf(hostHeader: string): string | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+))(?::\d{1,5})?$/.exec(hostHeader);
  return m ? normalize(m[1] ?? m[2]) : null;
}

/** A missing Host is no browser's (browsers always send it), so it cannot be a rebinding page. */
export function hostAllowed(hostHeader: string | undefined, policy: HostPolicy): boolean {
  if (hostHeader === undefined || policy.anyHost) return true;
  const name = hostnameOf(hostHeader);
  return name !== null && policy.names.has(name);
}

/**
 * Listed origins (or '*'), and the server's own: a name it answers to, at the port the request came in on (the
 * playground's page, served by this server). A proxy on another port or name needs --allowed-origin.
 */
export function originAllowed(
  origin: string,
  allowedOrigins: readonly string[],
  policy: HostPolicy,
  localPort: number | undefined,
): boolean {
  if (allowedOrigins.includes('*') || allowedOrigins.includes(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (sandboxed frames, file://) and garbage
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return policy.names.has(normalize(url.hostname)) && port === localPort;
}

/** Whether binding to `host` exposes the server beyond this machine. */
export function exposedBeyondLoopback(host: string): boolean {
  return !LOOPBACK_NAMES.includes(normalize(host)) && !normalize(host).startsWith('127.');
}
