/**
 * What a kind tells the rest of Chorus through its descriptor, so that no other folder names it: the feed a kind that
 * reads the Thinker's text makes (the Thinker runs it for a consumer of that kind, tts here), and the READY facts
 * each kind declares in its own folder, which the wire checks only as an envelope and the kind reads through its
 * own schema.
 */
import { Value } from '@sinclair/typebox/value';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ModelFactsSchema, type ModelFacts } from '../../src/common/modelFacts.ts';
import type { TextBody } from '../../src/common/payloads.ts';
import { Code2WavFactsSchema } from '../../stages/code2wav/protocol.ts';
import { descriptorOf } from '../../stages/registry.ts';
import { factsIn } from '../../stages/StageKindDescriptor.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { TtsFactsSchema } from '../../stages/tts/protocol.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const thinkerSpec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;
const TTS_FACTS: ModelFacts = { kind: 'tts', sampleRateHz: 24000, samplesPerFrame: 1920, voiceSampleRateHz: 22050 };

describe('a consumer that reads the Thinker text', () => {
  beforeEach(() => resetSeqs());

  it('gets the tokens main gets, chunked by the feed its kind makes', async () => {
    const adapter = new FakeAdapter();
    const ctx = stageContext(thinkerSpec, adapter);
    const readsText = descriptorOf('tts').readsText!;
    expect(readsText.from).toContain('thinker');
    const core = new ThinkerCore(ctx, new KvLengthRunner(), null, (asyncChunk) => readsText.feed(asyncChunk));
    core.add({
      type: 'add',
      requestId: 'r',
      sampling: { ...thinkerSpec.defaultSamplingParams, maxTokens: 5, ignoreEos: true },
      downstream: [
        { instance: 'main', stageId: 'main' },
        { instance: 'tts#0', stageId: 'tts' },
      ],
      upstreams: [],
      args: { promptTokenIds: [1, 2, 3] },
      firstChunkDeadline: Date.now() + 30_000,
    });
    let steps = 0;
    while (core.step()) if (++steps > 100) throw new Error('the thinker never stops');
    await vi.waitFor(() => expect(ctx.posted.some((m) => m.type === 'finished')).toBe(true));
    const ids = (to: string) => adapter.to(to).flatMap((c) => (c.body as TextBody).tokenIds);
    expect(adapter.to('tts#0').every((c) => (c.body as TextBody).kind === 'text')).toBe(true);
    expect(ids('tts#0')).toHaveLength(5);
    expect(ids('tts#0')).toEqual(ids('main'));
    expect(adapter.to('tts#0').at(-1)?.final).toBe(true);
  });
});

describe('READY facts', () => {
  it('cross the wire as an envelope: a kind and values a wire carries, never NaN or an object', () => {
    expect(Value.Check(ModelFactsSchema, TTS_FACTS)).toBe(true);
    expect(Value.Check(ModelFactsSchema, { kind: 'echo' })).toBe(true);
    expect(Value.Check(ModelFactsSchema, { ...TTS_FACTS, sampleRateHz: Number.NaN })).toBe(false);
    expect(Value.Check(ModelFactsSchema, { ...TTS_FACTS, nested: { a: 1 } })).toBe(false);
    expect(Value.Check(ModelFactsSchema, { sampleRateHz: 24000 })).toBe(false);
  });

  it('are read through their own kind schema, and are no other kind facts', () => {
    expect(factsIn(TtsFactsSchema, TTS_FACTS)?.voiceSampleRateHz).toBe(22050);
    expect(factsIn(Code2WavFactsSchema, TTS_FACTS)).toBeUndefined();
    expect(factsIn(TtsFactsSchema, { ...TTS_FACTS, samplesPerFrame: 0 })).toBeUndefined();
    expect(descriptorOf('tts').audioFacts?.(TTS_FACTS)).toEqual({ sampleRateHz: 24000, samplesPerFrame: 1920 });
    expect(descriptorOf('code2wav').audioFacts?.(TTS_FACTS)).toEqual({});
  });
});
