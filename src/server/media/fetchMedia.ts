/**
 * Fetches one media item from a URL the operator allow-listed (mediaUrlAllowList), with a deadline that covers
 * the body too and a byte cap enforced while reading, so a slow or endless remote cannot hold a request or the
 * server's memory. Redirects are not followed: the allow-list was checked for this URL only, and a redirect
 * could lead anywhere (an internal address included). A request that is gone (`cancel` aborted) stops its fetch.
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { mediaInvalid } from '../../media/mediaError.ts';

export interface MediaFetchLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

export async function fetchMedia(
  url: URL,
  limits: MediaFetchLimits,
  what: string,
  accept = 'image/png, image/jpeg',
  cancel?: AbortSignal,
): Promise<Uint8Array> {
  const timeout = AbortSignal.timeout(limits.timeoutMs);
  const stop = new AbortController();
  const signal = AbortSignal.any([timeout, stop.signal, ...(cancel ? [cancel] : [])]);
  const failed = (problem: string, cause?: unknown) => mediaInvalid(what, `${problem} (${url.href})`, cause);
  const stopped = () =>
    cancel?.aborted
      ? new ChorusError(ErrorCodes.REQUEST_CANCELLED, `${what}: the request was cancelled while its media was fetched`)
      : failed(`the media URL did not answer within ${limits.timeoutMs} ms`);
  let res: Response;
  try {
    res = await fetch(url, { signal, redirect: 'manual', headers: { accept } });
  } catch (err) {
    if (timeout.aborted || cancel?.aborted) throw stopped();
    throw failed(
      `cannot fetch the media URL: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`,
      err,
    );
  }
  try {
    if (res.status >= 300 && res.status < 400) {
      throw failed(
        `the media URL redirects (HTTP ${res.status}); redirects are not followed: send the final URL (it must be ` +
          `allow-listed too)`,
      );
    }
    if (!res.ok) throw failed(`fetching the media URL gave HTTP ${res.status}`);
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    if (declared > limits.maxBytes)
      throw failed(`the media is ${declared} bytes; this server fetches at most ${limits.maxBytes}`);
    return await readCapped(res, limits.maxBytes, () =>
      failed(`the media is over ${limits.maxBytes} bytes, the most this server fetches`),
    );
  } catch (err) {
    stop.abort(); // releases the socket of a body left unread
    if (timeout.aborted || cancel?.aborted) throw stopped();
    throw err;
  }
}

/** Reads the body, giving up as soon as it passes maxBytes (content-length may be absent or wrong). */
async function readCapped(res: Response, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (res.body) {
    for await (const chunk of res.body) {
      total += chunk.byteLength;
      if (total > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
