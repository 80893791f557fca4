/**
 * Media references in requests: `data:` URLs are decoded here; remote (http/https) URLs are refused with
 * CHORUS_ERR_MEDIA_REMOTE_URL unless the operator's allow-list names them. The server never fetches
 * arbitrary URLs: that would let any client make it request internal addresses (SSRF).
 *
 * An allow-list entry is a URL prefix such as `https://cdn.example.com/images/`. Matching compares the
 * parsed origin (scheme, host, port) exactly and then the path prefix, so `https://cdn.example.com.evil.io`
 * or `https://user@cdn.example.com` tricks cannot pass a string-prefix test.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { mediaInvalid } from './mediaError.ts';

export interface DataUrl {
  /** Lower-cased, without parameters; '' when the URL gives none. */
  readonly mediaType: string;
  readonly bytes: Uint8Array;
}

export type ResolvedMediaUrl =
  { readonly kind: 'data'; readonly data: DataUrl } | { readonly kind: 'remote'; readonly url: URL };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Strict base64 (whitespace allowed): Buffer.from(s, 'base64') silently skips bad characters. */
export function decodeBase64(text: string, what = 'base64 data'): Uint8Array {
  // Text with no whitespace (what clients send) is checked by its decoded length, not by two regexes over it: those
  // cost main's event loop 6.0 ms of CPU for a 15 s clip's 990 KB data URL, this 0.45 ms (measured, load 41).
  const strict = decodeBase64Strict(text);
  if (strict) return new Uint8Array(strict.buffer, strict.byteOffset, strict.byteLength);
  const compact = text.replace(/\s+/g, '');
  if (compact.length % 4 === 1 || !BASE64.test(compact)) throw mediaInvalid(what, 'data is not valid base64');
  const buf = Buffer.from(compact, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * Strict base64 decoding. Buffer.from(s, 'base64') silently skips invalid characters, which would turn a
 * client's encoding bug into noise fed to the model; this rejects it instead. Rather than testing the text
 * against a pattern first (a regex over a 2 MB body is ~9 ms on the server thread, measured), it decodes and
 * checks the length: every skipped character makes the result shorter than the text's length promises.
 * Node also reads the base64url alphabet (- and _), which decodes to the bytes the client meant, so it passes.
 */
export function decodeBase64Strict(text: string): Buffer | null {
  if (text.length % 4 !== 0) return null;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === (text.length / 4) * 3 - padding ? bytes : null;
}

/** Parses `data:[<media type>][;param=value]*[;base64],<data>` (RFC 2397). */
export function parseDataUrl(url: string, what = 'data URL'): DataUrl {
  if (!/^data:/i.test(url)) throw mediaInvalid(what, 'is not a data: URL');
  const comma = url.indexOf(',');
  if (comma < 0) throw mediaInvalid(what, 'data: URL has no comma before its data');
  const header = url
    .slice(5, comma)
    .split(';')
    .map((s) => s.trim());
  const isBase64 = header.length > 1 && header[header.length - 1].toLowerCase() === 'base64';
  const mediaType = (header[0] ?? '').toLowerCase();
  const payload = url.slice(comma + 1);
  if (isBase64) return { mediaType, bytes: decodeBase64(payload, what) };
  try {
    return { mediaType, bytes: new TextEncoder().encode(decodeURIComponent(payload)) };
  } catch (err) {
    throw mediaInvalid(what, 'data: URL has a malformed percent-escape', err);
  }
}

function allowedBy(url: URL, entry: string): boolean {
  let prefix: URL;
  try {
    prefix = new URL(entry);
  } catch {
    return false; // a malformed entry allows nothing
  }
  if (url.username || url.password) return false;
  return url.origin === prefix.origin && url.pathname.startsWith(prefix.pathname);
}

/** True when an http(s) URL is covered by one of the allow-list's URL prefixes. */
export function isRemoteUrlAllowed(url: string, allowList: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return false;
  return allowList.some((entry) => allowedBy(parsed, entry));
}

/**
 * A data: URL is decoded; an allowed remote URL is returned for the caller to fetch (with its own size and
 * time limits); anything else is refused.
 */
export function resolveMediaUrl(url: string, allowList: readonly string[] = [], what = 'media URL'): ResolvedMediaUrl {
  if (/^data:/i.test(url)) return { kind: 'data', data: parseDataUrl(url, what) };
  if (isRemoteUrlAllowed(url, allowList)) return { kind: 'remote', url: new URL(url) };
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    throw new ChorusError(
      ErrorCodes.MEDIA_REMOTE_URL,
      `${what}: remote URLs are not fetched by this server; send the media inline as a data: URL ` +
        `(data:image/png;base64,...) or ask the operator to add its prefix to the media URL allow-list`,
    );
  }
  throw mediaInvalid(what, `unsupported URL scheme${scheme ? ` "${scheme}"` : ''}; send a data: URL`);
}
