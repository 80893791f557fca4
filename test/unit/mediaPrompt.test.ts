/** Main's side of media: content parts -> prompt with expanded placeholders, items, spans; routing; request checks. */
import { describe, expect, it } from 'vitest';
import { checkPromptFits, placeholderIds, preparePrompt, type PromptContext } from '../../src/engine/mediaPrompt.ts';
import { MAIN } from '../../src/common/graph.ts';
import { planEdges, stagesFor } from '../../src/engine/planEdges.ts';
import type { ChatMessage, ContentPart } from '../../src/common/engine.ts';
import { encodersOf } from '../../src/common/graph.ts';
import { validateRequest } from '../../src/engine/validateRequest.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { probeAudio, probeImage } from '../../src/media/probeMedia.ts';
import { ByteTokenizer } from '../../src/tokenizer/ByteTokenizer.ts';
import { configWith } from '../helpers/engine.ts';
import { pcm16Bytes, pngBytes, wavBytes } from '../helpers/media.ts';

const mm = configWith('tiny-omni.yaml');
const tokenizer = new ByteTokenizer(512);
const ctx = (graph = mm, maxItemBytes = 8 << 20): PromptContext => ({
  tokenizer,
  placeholders: placeholderIds(tokenizer),
  encoders: encodersOf(graph),
  maxItemBytes,
});
const AUDIO = tokenizer.specialTokenId('<|audio|>');
const IMAGE = tokenizer.specialTokenId('<|image|>');

function errorOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('preparePrompt', () => {
  it("puts each item's placeholder where its part stands, expanded to its embedding count", () => {
    const image = pngBytes(640, 480);
    const audio = wavBytes(2.5);
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look ' },
          { type: 'image', data: image },
          { type: 'text', text: ' and hear ' },
          { type: 'audio', data: audio, format: 'wav' },
          { type: 'text', text: '!' },
        ],
      },
    ];
    const p = preparePrompt(messages, ctx());
    const nImage = probeImage(image).numEmbeddings;
    const nAudio = probeAudio(audio, 'wav').numEmbeddings;
    // 640 x 480 -> 252 x 168 px (18 x 12 patches, 2 x 2 merged); 2.5 s -> 250 mel frames / 4
    expect([nImage, nAudio]).toEqual([54, 63]);
    const start = tokenizer.specialTokenId('<|im_start|>');
    const end = tokenizer.specialTokenId('<|im_end|>');
    expect(p.promptTokenIds).toEqual([
      start,
      ...tokenizer.encode('system\nBe brief.'),
      end,
      ...tokenizer.encode('\n'),
      start,
      ...tokenizer.encode('user\nLook '),
      ...Array(nImage).fill(IMAGE),
      ...tokenizer.encode(' and hear '),
      ...Array(nAudio).fill(AUDIO),
      ...tokenizer.encode('!'),
      end,
      ...tokenizer.encode('\n'),
      start,
      ...tokenizer.encode('assistant\n'),
    ]);
    expect(p.items.map((i) => [i.index, i.modality, i.what, i.numEmbeddings, i.encoder.stageId])).toEqual([
      [0, 'image', 'messages[1].content[1] (image)', nImage, 'image-encoder'],
      [1, 'audio', 'messages[1].content[3] (audio)', nAudio, 'audio-encoder'],
    ]);
    const imageAt = p.promptTokenIds.indexOf(IMAGE);
    expect(p.spans).toEqual([
      { item: 0, modality: 'image', placeholderIndex: expect.any(Number), start: imageAt, length: nImage },
      {
        item: 1,
        modality: 'audio',
        placeholderIndex: expect.any(Number),
        start: p.promptTokenIds.indexOf(AUDIO),
        length: nAudio,
      },
    ]);
  });

  it('leaves text-only prompts exactly as before, parts or not; marker text typed by a user stays text', () => {
    const text = [{ role: 'user', content: 'Hi <|image|> there' }] as const;
    const asParts: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi <|image|>' },
          { type: 'text', text: ' there' },
        ],
      },
    ];
    const plain = tokenizer.applyChatTemplate(text);
    expect(preparePrompt(text, ctx()).promptTokenIds).toEqual(plain);
    expect(preparePrompt(asParts, ctx())).toEqual({ promptTokenIds: plain, items: [], spans: [] });
    expect(plain).not.toContain(IMAGE);
  });

  it('refuses an item before admission with CHORUS_ERR_MEDIA_INVALID naming it and what is wrong', () => {
    const user = (...content: ContentPart[]): ChatMessage[] => [
      { role: 'user', content: [{ type: 'text', text: 'x' }, ...content] },
    ];
    const cases: [ChatMessage[], PromptContext, RegExp][] = [
      [
        user({ type: 'image', data: new TextEncoder().encode('not an image') }),
        ctx(),
        /^messages\[0\]\.content\[1\] \(image\): not a PNG or JPEG image/,
      ],
      [
        user({ type: 'audio', data: pcm16Bytes(0.001), format: 'pcm16' }),
        ctx(),
        /^messages\[0\]\.content\[1\] \(audio\): audio is 1\.0 ms long; at least 10 ms is needed/,
      ],
      [
        user(
          { type: 'audio', data: wavBytes(1), format: 'wav' },
          { type: 'audio', data: new Uint8Array(5), format: 'wav' },
        ),
        ctx(),
        /^messages\[0\]\.content\[2\] \(audio\): not a WAV file/,
      ],
      [
        user({ type: 'image', data: pngBytes(64, 64) }),
        ctx(configWith('tiny-omni-text-in.yaml')),
        /^messages\[0\]\.content\[1\] \(image\): this pipeline has no image encoder/,
      ],
      [
        user({ type: 'audio', data: wavBytes(1), format: 'wav' }),
        ctx(mm, 1000),
        /^messages\[0\]\.content\[1\] \(audio\): 47 KiB is over the 1000 B limit per item/,
      ],
    ];
    for (const [messages, c, pattern] of cases) {
      const err = errorOf(() => preparePrompt(messages, c));
      expect(err.code).toBe(ErrorCodes.MEDIA_INVALID);
      expect(err.message).toMatch(pattern);
    }
  });

  it("refuses a prompt that media makes longer than the thinker's positions, saying which item takes how many", () => {
    const long = preparePrompt(
      [
        {
          role: 'user',
          content: [{ type: 'audio', data: new Uint8Array(170 * 16000 * 2), format: 'pcm16', sampleRateHz: 16000 }],
        },
      ],
      ctx(),
    );
    const err = errorOf(() => checkPromptFits(long, mm));
    expect(err.code).toBe(ErrorCodes.CONTEXT_LENGTH_EXCEEDED);
    expect(err.message).toMatch(/^the prompt takes \d+ positions \(4250 of them for 1 media item\(s\): /);
    expect(err.message).toMatch(/media item\(s\): messages\[0\]\.content\[0\] \(audio\) 4250\); the thinker has 4096/);
    expect(() =>
      checkPromptFits(
        preparePrompt(
          [
            {
              role: 'user',
              content: [{ type: 'audio', data: new Uint8Array(160 * 16000 * 2), format: 'pcm16', sampleRateHz: 16000 }],
            },
          ],
          ctx(),
        ),
        mm,
      ),
    ).not.toThrow();
  });
});

describe('routing and request checks', () => {
  it('a request needs only the encoders of its media; main feeds each encoder replica over its own edge', () => {
    const ids = (media: ('audio' | 'image')[], out: string[]) => stagesFor(mm, out, media).map((s) => s.stageId);
    expect(ids([], ['text'])).toEqual(['thinker']);
    expect(ids(['image'], ['text'])).toEqual(['image-encoder', 'thinker']);
    expect(ids(['image', 'audio'], ['text', 'audio'])).toEqual([
      'audio-encoder',
      'image-encoder',
      'thinker',
      'talker',
      'code2wav',
    ]);
    const edges = planEdges(mm).map((e) => `${e.from}->${e.to}`);
    expect(edges).toEqual(
      expect.arrayContaining([
        `${MAIN}->audio-encoder#0`,
        `${MAIN}->image-encoder#0`,
        'audio-encoder#0->thinker#0',
        'image-encoder#0->thinker#0',
        `thinker#0->${MAIN}`,
      ]),
    );
  });

  it('validates the shape of content parts', () => {
    const bad = (content: unknown) =>
      errorOf(() =>
        validateRequest({ messages: [{ role: 'user', content: content as string }], modalities: ['text'] }),
      );
    expect(bad([{ type: 'file', data: new Uint8Array(1) }])).toMatchObject({
      code: ErrorCodes.REQUEST_INVALID,
      message: 'messages[0].content[0].type must be text, audio, image, video',
    });
    expect(bad([{ type: 'video', data: new Uint8Array(1) }]).message).toBe(
      'messages[0].content[0].numFrames must be a positive integer',
    );
    const frames = { type: 'video', numFrames: 2, width: 28, height: 28, fps: 2, sourceKey: 'k' };
    expect(bad([{ ...frames, data: new Uint8Array(28 * 28 * 3) }]).message).toBe(
      'messages[0].content[0].data must hold numFrames RGB frames of width x height',
    );
    expect(bad([{ type: 'audio', data: 'base64?', format: 'wav' }]).message).toBe(
      'messages[0].content[0].data must be the audio bytes (a Uint8Array)',
    );
    expect(
      bad([
        { type: 'text', text: 'a' },
        { type: 'audio', data: new Uint8Array(2), format: 'mp3' },
      ]).message,
    ).toBe('messages[0].content[1].format must be wav or pcm16');
    expect(bad(42).message).toBe('messages[0].content must be a string or a list of parts');
  });
});
