/** data: URLs are decoded; remote URLs are refused unless an allow-list prefix covers them. */
import { describe, expect, it } from 'vitest';
import { decodeBase64, isRemoteUrlAllowed, parseDataUrl, resolveMediaUrl } from '../../src/media/mediaUrl.ts';
import { ErrorCodes } from '../../src/common/errors.ts';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe('parseDataUrl', () => {
  it('decodes base64 and percent-encoded data with the media type', () => {
    const bytes = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0, 255);
    const url = `data:image/PNG;base64,${Buffer.from(bytes).toString('base64')}`;
    expect(parseDataUrl(url)).toEqual({ mediaType: 'image/png', bytes });
    expect(parseDataUrl('data:text/plain;charset=utf-8,a%20b')).toEqual({
      mediaType: 'text/plain',
      bytes: new TextEncoder().encode('a b'),
    });
    expect(parseDataUrl('data:,x').mediaType).toBe('');
    // whitespace is ignored
    expect(parseDataUrl('data:image/jpeg;base64,AA\nBB').bytes).toEqual(Uint8Array.of(0, 0, 65));
  });

  it('refuses malformed data URLs and base64 with stray characters', () => {
    expect(() => parseDataUrl('data:image/png;base64')).toThrow(/no comma/);
    expect(() => parseDataUrl('data:image/png;base64,AAA*')).toThrow(/not valid base64/);
    expect(() => decodeBase64('A')).toThrow(/not valid base64/);
    expect(() => parseDataUrl('data:text/plain,%E0%A4%A')).toThrow(/percent-escape/);
    expect(codeOf(() => parseDataUrl('data:image/png;base64,@@'))).toBe(ErrorCodes.MEDIA_INVALID);
  });
});

describe('resolveMediaUrl', () => {
  const allowList = ['https://cdn.example.com/images/', 'http://localhost:8080/'];

  it('resolves data URLs and refuses remote ones by default with MEDIA_REMOTE_URL', () => {
    expect(resolveMediaUrl('data:image/png;base64,AAAA').kind).toBe('data');
    expect(codeOf(() => resolveMediaUrl('https://cdn.example.com/images/cat.png'))).toBe(ErrorCodes.MEDIA_REMOTE_URL);
    expect(() => resolveMediaUrl('https://x.test/a.png', [], 'messages[1].content[0].image_url')).toThrow(
      /messages\[1\]\.content\[0\]\.image_url: remote URLs are not fetched/,
    );
  });

  it('lets an allow-list prefix through and nothing that merely looks like it', () => {
    const ok = resolveMediaUrl('https://cdn.example.com/images/cat.png', allowList);
    expect(ok.kind === 'remote' && ok.url.href).toBe('https://cdn.example.com/images/cat.png');
    expect(isRemoteUrlAllowed('http://localhost:8080/a.jpg', allowList)).toBe(true);
    for (const bad of [
      'https://cdn.example.com/other/cat.png', // outside the path prefix
      'https://cdn.example.com.evil.io/images/cat.png', // host suffix trick
      'https://user@cdn.example.com/images/cat.png', // credentials
      'http://cdn.example.com/images/cat.png', // other scheme
      'https://cdn.example.com:444/images/cat.png', // other port
      'http://localhost:8081/a.jpg',
    ]) {
      expect(isRemoteUrlAllowed(bad, allowList), bad).toBe(false);
      expect(codeOf(() => resolveMediaUrl(bad, allowList))).toBe(ErrorCodes.MEDIA_REMOTE_URL);
    }
    expect(isRemoteUrlAllowed('https://a.test/x', ['not a url'])).toBe(false);
  });

  it('refuses other schemes as invalid media', () => {
    expect(codeOf(() => resolveMediaUrl('file:///etc/passwd', ['file:///']))).toBe(ErrorCodes.MEDIA_INVALID);
    expect(() => resolveMediaUrl('ftp://x/y.png')).toThrow(/unsupported URL scheme "ftp"/);
    expect(() => resolveMediaUrl('just text')).toThrow(/unsupported URL scheme/);
  });
});
