/**
 * Pure pieces of the front end's media input: chat content parts -> engine parts, item names in the client's
 * terms, the realtime media checks against a pipeline, cumulative stage totals -> counter increments, and the
 * media URL allow-list option.
 */
import { describe, expect, it } from 'vitest';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ContentPart } from '../../src/common/engine.ts';
import { MAX_REMOTE_IMAGES, planChatCompletion } from '../../src/server/chat/chatRequest.ts';
import { CumulativeCounters } from '../../src/server/metrics/CumulativeCounters.ts';
import { leadingItem, renameError } from '../../src/server/media/itemNames.ts';
import { MediaChecker } from '../../src/server/media/MediaChecker.ts';
import { resolveServerOptions } from '../../src/server/options.ts';
import { ClientInputError } from '../../src/server/validate.ts';
import { configWith } from '../helpers/engine.ts';
import { pcm16Bytes, pngBytes, wavBytes } from '../helpers/media.ts';

/**
 * Parts with their bytes as plain Uint8Arrays (the server may hand the engine Buffers, a subclass): compares content.
 */
const plainBytes = (parts: readonly ContentPart[]) =>
  parts.map((p) => (p.type === 'text' ? p : { ...p, data: new Uint8Array(p.data) }));

const limits = { cap: 100, stageDefault: 64, promptPositions: 4096 };
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const png = pngBytes(32, 32, 1);
const wav = wavBytes(0.5, 16000, 1);
const user = (...content: object[]) => ({ role: 'user', content });

async function refusal(
  body: unknown,
  media = { allowList: [] as string[], timeoutMs: 1000, maxBytes: 1 << 20 },
): Promise<ChorusError> {
  try {
    await planChatCompletion(body, 'r', limits, media);
  } catch (err) {
    expect(err).toBeInstanceOf(ChorusError);
    return err as ChorusError;
  }
  throw new Error('accepted');
}

describe('chat content parts', () => {
  it('maps image_url data URLs and input_audio onto engine parts, in order, bytes intact', async () => {
    const plan = await planChatCompletion(
      {
        messages: [
          user(
            { type: 'text', text: 'Look: ' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(png)}`, detail: 'low' } },
            { type: 'input_audio', input_audio: { data: b64(wav), format: 'wav' } },
            {
              type: 'input_audio',
              input_audio: { data: b64(pcm16Bytes(0.1)), format: 'pcm16', sample_rate_hz: 16000 },
            },
          ),
        ],
      },
      'r',
      limits,
    );
    const parts = plainBytes(plan.request.messages[0].content as ContentPart[]);
    expect(parts.map((p) => p.type)).toEqual(['text', 'image', 'audio', 'audio']);
    expect(parts[1]).toEqual({ type: 'image', data: new Uint8Array(png) });
    expect(parts[2]).toEqual({ type: 'audio', data: new Uint8Array(wav), format: 'wav' });
    expect(parts[3]).toMatchObject({ format: 'pcm16', sampleRateHz: 16000 });
  });

  it('takes line-wrapped base64 too (the slower lenient decoder runs only when the strict one refuses)', async () => {
    const wrapped = b64(wav).replace(/.{76}/g, '$&\n');
    const plan = await planChatCompletion(
      { messages: [user({ type: 'input_audio', input_audio: { data: wrapped, format: 'wav' } })] },
      'r',
      limits,
    );
    expect(plainBytes(plan.request.messages[0].content as ContentPart[])).toEqual([
      { type: 'audio', data: new Uint8Array(wav), format: 'wav' },
    ]);
  });

  it('keeps text-only part lists one string (the prompt media-free requests always had)', async () => {
    const plan = await planChatCompletion(
      { messages: [user({ type: 'text', text: 'a' }, { type: 'text', text: 'b' })] },
      'r',
      limits,
    );
    expect(plan.request.messages[0].content).toBe('ab');
  });

  it('refuses bad media naming the item, remote URLs by default, and media outside user messages', async () => {
    const body = (part: object) => ({
      messages: [{ role: 'system', content: 'rules' }, user({ type: 'text', text: 'x' }, part)],
    });
    const badBase64 = await refusal(body({ type: 'input_audio', input_audio: { data: 'not*base64', format: 'wav' } }));
    expect(badBase64).toMatchObject({
      code: ErrorCodes.MEDIA_INVALID,
      message: 'messages[1].content[1] (audio): data is not valid base64',
    });
    const textUrl = await refusal(
      body({ type: 'image_url', image_url: { url: `data:text/plain;base64,${b64(png)}` } }),
    );
    expect(textUrl).toMatchObject({
      code: ErrorCodes.MEDIA_INVALID,
      message: 'messages[1].content[1] (image): the data URL holds text/plain; send image/png or image/jpeg',
    });
    const remote = await refusal(body({ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }));
    expect(remote.code).toBe(ErrorCodes.MEDIA_REMOTE_URL);
    expect(remote.message).toMatch(/^messages\[1\]\.content\[1\] \(image\): remote URLs are not fetched/);
    const scheme = await refusal(body({ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }));
    expect(scheme).toMatchObject({
      code: ErrorCodes.MEDIA_INVALID,
      message: expect.stringContaining('unsupported URL scheme "file"'),
    });
    const inSystem = await refusal({
      messages: [
        { role: 'system', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        user({ type: 'text', text: 'x' }),
      ],
    });
    expect(inSystem).toBeInstanceOf(ClientInputError);
    expect(inSystem).toMatchObject({ code: ErrorCodes.REQUEST_INVALID, param: 'messages[0].content[0]' });
  });

  it('bounds the fetches one request may cause, before fetching any', async () => {
    const allowList = ['http://127.0.0.1:9/'];
    const many = Array.from({ length: MAX_REMOTE_IMAGES + 1 }, (_, i) => ({
      type: 'image_url',
      image_url: { url: `http://127.0.0.1:9/${i}.png` },
    }));
    const err = await refusal({ messages: [user(...many)] }, { allowList, timeoutMs: 1000, maxBytes: 1 << 20 });
    expect(err).toMatchObject({
      code: ErrorCodes.REQUEST_INVALID,
      message: expect.stringContaining(`at most ${MAX_REMOTE_IMAGES} per request`),
    });
  });

  it('names engine items by the body index of their message (empty messages are not sent)', async () => {
    const plan = await planChatCompletion(
      {
        messages: [
          { role: 'assistant', content: null },
          { role: 'developer', content: 'rules' },
          user(
            { type: 'text', text: 'x' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(png)}` } },
          ),
        ],
      },
      'r',
      limits,
    );
    expect(plan.request.messages).toHaveLength(2);
    const engineError = new ChorusError(
      ErrorCodes.MEDIA_INVALID,
      'messages[1].content[1] (image): cannot decode PNG: bad data',
    );
    const renamed = renameError(engineError, plan.itemNamer) as ClientInputError;
    expect(renamed).toBeInstanceOf(ClientInputError);
    expect(renamed).toMatchObject({
      code: ErrorCodes.MEDIA_INVALID,
      message: 'messages[2].content[1] (image): cannot decode PNG: bad data',
      param: 'messages[2].content[1]',
    });
    expect(renameError(new ChorusError(ErrorCodes.STAGE_DIED, 'talker died'), plan.itemNamer)).toMatchObject({
      message: 'talker died',
    });
    expect(leadingItem(engineError.message)).toEqual({ message: 1, part: 1 });
    expect(leadingItem('talker died')).toBeNull();
  });
});

describe('realtime media checks', () => {
  const mm = new MediaChecker(configWith('tiny-omni.yaml'));
  const textOnly = new MediaChecker(configWith('tiny-omni-text-in.yaml'));

  it('accepts what the engine would admit, and refuses what it would not, naming the item', () => {
    expect(() => mm.check({ type: 'audio', data: wav, format: 'wav' }, 'a')).not.toThrow();
    expect(() => mm.check({ type: 'image', data: png }, 'i')).not.toThrow();
    expect(() =>
      mm.check(
        { type: 'audio', data: pcm16Bytes(0.001), format: 'pcm16', sampleRateHz: 24000 },
        'input_audio_buffer (audio)',
      ),
    ).toThrow(/^input_audio_buffer \(audio\): audio is 1\.0 ms long; at least 10 ms is needed$/);
    expect(() =>
      mm.check({ type: 'image', data: new TextEncoder().encode('GIF89a...') }, 'item.content[0] (image)'),
    ).toThrow(/^item\.content\[0\] \(image\): /);
    expect(() => textOnly.check({ type: 'image', data: png }, 'item.content[0] (image)')).toThrow(
      /^item\.content\[0\] \(image\): this pipeline has no image encoder/,
    );
    expect([mm.accepts('audio'), mm.accepts('image'), textOnly.accepts('audio')]).toEqual([true, true, false]);
  });
});

describe('cumulative stage totals -> counter increments', () => {
  it('counts the first total whole, then differences; a drop or a restart starts a new series', () => {
    const c = new CumulativeCounters();
    expect(c.increment('enc#0', 'hits', 3)).toBe(3);
    expect(c.increment('enc#0', 'hits', 3)).toBe(0);
    expect(c.increment('enc#0', 'hits', 5)).toBe(2);
    expect(c.increment('enc#1', 'hits', 4)).toBe(4); // another replica, its own series
    expect(c.increment('enc#0', 'misses', 1)).toBe(1);
    expect(c.increment('enc#0', 'hits', 1)).toBe(1); // dropped: the process restarted and counted 1 since
    c.restart('enc#0'); // died: the next report counts whole even though it is not lower
    expect(c.increment('enc#0', 'hits', 7)).toBe(7);
    expect(c.increment('enc#0', 'misses', 2)).toBe(2);
    expect(c.increment('enc#1', 'hits', 6)).toBe(2); // untouched by enc#0's restart
    expect(c.increment('enc#0', 'hits', Number.NaN)).toBe(0);
    expect(c.increment('enc#0', 'hits', 8)).toBe(1);
  });
});

describe('media URL allow-list option', () => {
  it('takes http(s) prefixes and refuses anything that would silently allow nothing (or too much)', () => {
    expect(
      resolveServerOptions({ mediaUrlAllowList: ['https://cdn.example.com/images/'] }, 'm').mediaUrlAllowList,
    ).toEqual(['https://cdn.example.com/images/']);
    expect(resolveServerOptions({}, 'm').mediaUrlAllowList).toEqual([]);
    for (const bad of [
      'cdn.example.com/images/',
      'ftp://cdn.example.com/',
      'https://user:pw@cdn.example.com/',
      'https://cdn.example.com/?a=1',
    ]) {
      expect(() => resolveServerOptions({ mediaUrlAllowList: [bad] }, 'm'), bad).toThrow(
        expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID }),
      );
    }
  });
});
