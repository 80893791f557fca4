/**
 * Pure pieces of the front end: pcm16/WAV/base64 encoding, request planning, subprotocol rules.
 */
import { describe, expect, it } from 'vitest';
import { planChatCompletion } from '../../src/server/chat/chatRequest.ts';
import { decodeBase64Strict, floatToPcm16, pcm16ToBase64, wavFromPcm16 } from '../../src/server/pcm.ts';
import { eventJson } from '../../src/server/realtime/ServerEvent.ts';
import { parseClientEvent } from '../../src/server/realtime/clientEvents.ts';
import { newId } from '../../src/server/realtime/serverEvents.ts';
import { chooseSubprotocol } from '../../src/server/security.ts';
import { ClientInputError } from '../../src/server/validate.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { errorBody, httpStatusFor } from '../../src/server/httpErrors.ts';

describe('realtime ids', () => {
  it('are unique, carry their prefix and stay in the base64url alphabet', () => {
    const events = Array.from({ length: 20_000 }, () => newId('event'));
    expect(new Set(events).size).toBe(events.length);
    for (const id of [...events.slice(0, 50), newId('resp'), newId('item')]) expect(id).toMatch(/^[a-z]+_[\w-]{8,}$/);
    expect(newId('resp')).not.toBe(newId('resp'));
  });
});

describe('pcm16', () => {
  it('maps [-1, 1] to the full int16 range, clamps, and is little-endian', () => {
    const pcm = floatToPcm16(new Float32Array([0, 1, -1, 2, -2, 0.5, -0.5, 1 / 32767, Number.NaN]));
    const values = Array.from({ length: 9 }, (_, i) => pcm.readInt16LE(i * 2));
    expect(values).toEqual([0, 32767, -32768, 32767, -32768, 16384, -16384, 1, -32768]);
    expect([...pcm.subarray(2, 4)]).toEqual([0xff, 0x7f]);
  });

  it('rounds every sample as Math.round does, halves included (n / 32767 maps back to n)', () => {
    const halves = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -32767.5, 32766.5].map((y) => (y < 0 ? y / 32768 : y / 32767));
    const exact = Array.from({ length: 2001 }, (_, i) => (i - 1000) * 31);
    const samples = Float32Array.from([
      ...halves,
      ...exact.map((n) => (n < 0 ? n / 32768 : n / 32767)),
      ...Array.from({ length: 5000 }, (_, i) => Math.sin(i * 0.37) * 1.01),
    ]);
    const pcm = floatToPcm16(samples);
    samples.forEach((x, i) => {
      const y = Math.max(-1, Math.min(1, x));
      expect(pcm.readInt16LE(i * 2), `sample ${i} = ${x}`).toBe(Math.round(y < 0 ? y * 32768 : y * 32767) + 0);
    });
    exact.forEach((n, i) => expect(pcm.readInt16LE((halves.length + i) * 2)).toBe(n));
  });

  it('base64 of each chunk is its own pcm16, chunks of any size one after another (the scratch is reused)', () => {
    const chunk = (n: number, k: number) => Float32Array.from({ length: n }, (_, i) => Math.sin((i + k) / 7));
    const chunks = [chunk(4800, 1), chunk(48_000, 2), chunk(960, 3), chunk(300_000, 4), chunk(4800, 5)];
    const sent = chunks.map(pcm16ToBase64); // every string taken before the next chunk overwrites the scratch
    sent.forEach((b64, i) => expect(b64).toBe(floatToPcm16(chunks[i]).toString('base64')));
    expect(pcm16ToBase64(new Float32Array(0))).toBe('');
  });

  it('writes an audio delta event as JSON.stringify does, and every other event through it', () => {
    const delta = pcm16ToBase64(Float32Array.from({ length: 2400 }, (_, i) => Math.cos(i)));
    const ids = { event_id: 'event_"q"\\', response_id: 'resp_\u2028x', item_id: 'item_1', output_index: 0 };
    const audio = { type: 'response.output_audio.delta' as const, ...ids, content_index: 0, delta };
    expect(eventJson(audio)).toBe(JSON.stringify(audio));
    expect(JSON.parse(eventJson(audio))).toEqual(audio);
    const text = { type: 'response.output_audio_transcript.delta' as const, ...ids, content_index: 0, delta: 'a"\n' };
    expect(eventJson(text)).toBe(JSON.stringify(text));
  });

  it('wraps pcm16 in a 44-byte WAV header', () => {
    const data = Buffer.from([1, 0, 2, 0]);
    const wav = wavFromPcm16(data, 24000);
    expect(wav.length).toBe(48);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(40);
    expect(wav.toString('ascii', 12, 16)).toBe('fmt ');
    expect(wav.readUInt32LE(28)).toBe(48000); // byte rate
    expect(wav.readUInt16LE(32)).toBe(2); // block align
    expect(wav.readUInt32LE(40)).toBe(4);
    expect(wav.subarray(44)).toEqual(data);
  });

  it('decodes only strict base64', () => {
    expect(decodeBase64Strict('AAEC')).toEqual(Buffer.from([0, 1, 2]));
    expect(decodeBase64Strict('AAE=')).toEqual(Buffer.from([0, 1]));
    expect(decodeBase64Strict('')).toEqual(Buffer.alloc(0));
    for (const bad of ['AAE', 'AA E', 'AA*=', '====', 'A===', 'AAEC\n'])
      expect(decodeBase64Strict(bad), bad).toBeNull();
  });
});

describe('chat completion planning', () => {
  const limits = { cap: 100, stageDefault: 64, promptPositions: 4096 };
  const base = {
    messages: [
      { role: 'developer', content: 'rules' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ],
  };

  it('refuses text that cannot fit the context first: 400 context_length_exceeded, naming the bound', async () => {
    // 4096 positions x 16 bytes: one byte over is refused, the bound itself is not.
    const content = (bytes: number) => ({ messages: [{ role: 'user', content: 'é'.repeat(bytes / 2) }] });
    await expect(planChatCompletion(content(65536), 'r', limits)).resolves.toBeDefined();
    const err = await planChatCompletion(content(65538), 'r', limits).catch((e: ClientInputError) => e);
    expect(err).toMatchObject({ code: ErrorCodes.CONTEXT_LENGTH_EXCEEDED, param: 'messages' });
    expect((err as Error).message).toMatch(
      /65538 bytes; this model's context is 4096 positions, so text over 65536 bytes/,
    );
    expect(errorBody(ErrorCodes.CONTEXT_LENGTH_EXCEEDED, 'm').error).toEqual({
      message: 'm',
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
      param: null,
    });
    expect(httpStatusFor(ErrorCodes.CONTEXT_LENGTH_EXCEEDED)).toBe(400);
  });

  it('maps messages, modalities, limits and extensions', async () => {
    const plan = await planChatCompletion(
      { ...base, modalities: ['text', 'audio'], stream: true, max_tokens: 9, top_p: 0.5, seed: 3 },
      'r1',
      limits,
    );
    expect(plan.stream).toBe(true);
    expect(plan.audio).toEqual({ format: 'pcm16' });
    expect(plan.request).toMatchObject({
      requestId: 'r1',
      messages: [
        { role: 'system', content: 'rules' },
        { role: 'user', content: 'ab' },
      ],
      modalities: ['text', 'audio'],
      sampling: { maxTokens: 9, topP: 0.5, seed: 3 },
      talkerSampling: { seed: 3 },
    });
  });

  it('defaults: text only, the stage default limit (capped), WAV when not streaming', async () => {
    const plan = await planChatCompletion(base, 'r2', limits);
    expect(plan.request.modalities).toEqual(['text']);
    expect(plan.request.sampling).toEqual({}); // the engine applies the stage's configured max_tokens
    expect(plan.audio).toBeNull();
    expect(
      (await planChatCompletion(base, 'r2', { cap: 100, stageDefault: 500, promptPositions: 4096 })).request.sampling,
    ).toEqual({
      maxTokens: 100,
    });
    expect((await planChatCompletion({ ...base, modalities: ['audio'] }, 'r3', limits)).audio).toEqual({
      format: 'wav',
    });
  });

  it('names the bad field', async () => {
    const bad = async (body: unknown) => {
      try {
        await planChatCompletion(body, 'r', limits);
      } catch (err) {
        expect(err).toBeInstanceOf(ClientInputError);
        return [(err as ClientInputError).param, (err as ClientInputError).message];
      }
      throw new Error('accepted');
    };
    expect((await bad({ ...base, max_completion_tokens: 101 }))[0]).toBe('max_completion_tokens');
    expect((await bad({ ...base, top_p: 0 }))[0]).toBe('top_p');
    expect((await bad({ ...base, n: 2 }))[0]).toBe('n');
    expect((await bad({ messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }))[0]).toBe(
      'messages[0].content[0].image_url',
    );
    expect((await bad({ messages: [{ role: 'user', content: [{ type: 'video_url' }] }] }))[0]).toBe(
      'messages[0].content[0].video_url',
    );
    expect((await bad({ messages: [{ role: 'user', content: [{ type: 'file' }] }] }))[0]).toBe(
      'messages[0].content[0].type',
    );
    expect((await bad({ ...base, mm_processor_kwargs: { fps: 2, frames: 4 } }))[0]).toBe('mm_processor_kwargs.frames');
    expect((await bad({ messages: [{ role: 'system', content: 'only rules' }] }))[0]).toBe('messages');
    expect((await bad({ ...base, modalities: ['video'] }))[1]).toContain('must be one of "text", "audio"');
  });

  it('refuses a top-level field no API has by name, and cache_salt unless a non-empty string', async () => {
    const refused = (body: object) => planChatCompletion({ ...base, ...body }, 'r', limits).catch((e: unknown) => e);
    expect(await refused({ temprature: 0.5 })).toMatchObject({ code: ErrorCodes.REQUEST_INVALID, param: 'temprature' });
    expect(((await refused({ temprature: 0.5 })) as Error).message).toContain('temprature is not a field');
    for (const salt of [42, '', null, ['a']]) {
      const err = await refused({ cache_salt: salt });
      expect(err, JSON.stringify(salt)).toMatchObject({ code: ErrorCodes.REQUEST_INVALID, param: 'cache_salt' });
      expect((err as Error).message).toContain('cache_salt must be a non-empty string');
    }
    expect(await refused({ reasoning_effort: 'high' })).toMatchObject({
      code: ErrorCodes.PARAM_UNSUPPORTED,
      param: 'reasoning_effort',
    });
    const taken = { reasoning_effort: null, prompt_cache_key: 'k', safety_identifier: 's', cache_salt: 'tenant-a' };
    expect((await planChatCompletion({ ...base, ...taken }, 'r', limits)).cacheSalt).toBe('tenant-a');
    expect((await planChatCompletion(base, 'r', limits)).cacheSalt).toBeUndefined();
  });
});

describe('realtime event parsing', () => {
  it('accepts GA and beta audio formats, and the Chorus extensions', () => {
    const e = parseClientEvent(
      JSON.stringify({
        type: 'session.update',
        session: { audio: { output: { format: 'pcm16' } }, initial_codec_chunk_frames: 2 },
      }),
    );
    expect(e.type).toBe('session.update');
    expect(() =>
      parseClientEvent(
        JSON.stringify({
          type: 'session.update',
          session: { audio: { output: { format: { type: 'audio/pcm', rate: 24000 } } } },
        }),
      ),
    ).not.toThrow();
    expect(() =>
      parseClientEvent(
        JSON.stringify({
          type: 'session.update',
          session: { audio: { output: { format: { type: 'audio/pcm', rate: 16000 } } } },
        }),
      ),
    ).toThrow(ClientInputError);
    expect(() =>
      parseClientEvent(JSON.stringify({ type: 'session.update', session: { initial_codec_chunk_frames: 0 } })),
    ).toThrow(/initial_codec_chunk_frames/);
  });

  it('takes OpenAI fields Chorus does not implement when they ask for nothing', () => {
    expect(() =>
      parseClientEvent(
        JSON.stringify({
          type: 'session.update',
          session: {
            tools: [],
            tool_choice: 'auto',
            tracing: null,
            audio: { input: { turn_detection: null, transcription: null }, output: { speed: 1 } },
          },
        }),
      ),
    ).not.toThrow();
    expect(() =>
      parseClientEvent(JSON.stringify({ type: 'response.create', response: { metadata: { topic: 'x' }, tools: [] } })),
    ).not.toThrow();
  });

  const refusal = (event: object) => {
    try {
      parseClientEvent(JSON.stringify(event));
    } catch (err) {
      return { code: (err as ClientInputError).code, param: (err as ClientInputError).param };
    }
    return null;
  };

  it.each([
    [{ audio: { input: { noise_reduction: { type: 'near_field' } } } }, 'session.audio.input.noise_reduction'],
    [{ audio: { output: { speed: 1.5 } } }, 'session.audio.output.speed'],
    [{ include: ['item.input_audio_transcription.logprobs'] }, 'session.include'],
    [{ prompt: { id: 'pmpt_1' } }, 'session.prompt'],
    [{ voice: 'alloy' }, 'session.voice'], // the beta name of audio.output.voice
    [{ modalities: ['text'] }, 'session.modalities'],
  ])('session.update %j is refused naming %s', (session, param) => {
    expect(refusal({ type: 'session.update', session })).toEqual({ code: ErrorCodes.PARAM_UNSUPPORTED, param });
  });

  it('refuses a field no API has, in the session and in the objects in it, naming it', () => {
    for (const [session, param] of [
      [{ max_output_token: 5 }, 'session.max_output_token'],
      [{ audio: { output: { voices: 'x' } } }, 'session.audio.output.voices'],
      [
        { audio: { input: { turn_detection: { type: 'server_vad', treshold: 0.5 } } } },
        'session.audio.input.turn_detection.treshold',
      ],
    ] as const)
      expect(refusal({ type: 'session.update', session })).toEqual({ code: ErrorCodes.REQUEST_INVALID, param });
    expect(refusal({ type: 'response.create', response: { prompt: { id: 'pmpt_1' } } })).toEqual({
      code: ErrorCodes.PARAM_UNSUPPORTED,
      param: 'response.prompt',
    });
    expect(refusal({ type: 'response.create', response: { instruction: 'x' } })).toEqual({
      code: ErrorCodes.REQUEST_INVALID,
      param: 'response.instruction',
    });
  });

  it('refuses a field no event has at the top level, naming it; session.cache_salt is a non-empty string', () => {
    for (const [event, param] of [
      [{ type: 'response.cancel', response: {} }, 'response'],
      [{ type: 'response.create', instructions: 'x' }, 'instructions'],
      [{ type: 'session.update', session: {}, cache_salt: 'x' }, 'cache_salt'],
      [{ type: 'input_audio_buffer.commit', item_id: 'x' }, 'item_id'],
      [{ type: 'session.update', session: { cache_salt: 42 } }, 'session.cache_salt'],
      [{ type: 'session.update', session: { cache_salt: '' } }, 'session.cache_salt'],
    ] as const)
      expect(refusal(event), JSON.stringify(event)).toEqual({ code: ErrorCodes.REQUEST_INVALID, param });
    const update = parseClientEvent(JSON.stringify({ type: 'session.update', session: { cache_salt: 'a' } }));
    expect(update).toMatchObject({ session: { cache_salt: 'a' } });
  });
});

describe('subprotocols', () => {
  it('echoes realtime, never the key unless it is the only offer', () => {
    expect(chooseSubprotocol(new Set(['openai-insecure-api-key.k', 'realtime']))).toBe('realtime');
    expect(chooseSubprotocol(new Set(['openai-insecure-api-key.k', 'other']))).toBe('other');
    expect(chooseSubprotocol(new Set(['openai-insecure-api-key.k']))).toBe('openai-insecure-api-key.k');
    expect(chooseSubprotocol(new Set())).toBe(false);
  });
});
