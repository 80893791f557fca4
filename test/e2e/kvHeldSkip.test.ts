/**
 * An image whose positions the chosen Thinker's prefix cache holds goes to no encoder (src/engine/heldItems.ts): a
 * repeat of its prompt adopts that KV and never reads its rows. Real stage processes and models, one Thinker with a
 * prefix cache. When main's view is wrong (it predicts what an ended request left in the cache for a second, and this
 * cache's budget cannot hold the long prompt), the Thinker asks for the encode (CHORUS_ERR_KV_NOT_HELD) and the
 * request runs again with the image encoded: answered, with the same answer, no hang. /metrics counts the skips
 * (chorus_media_encodes_skipped_total) and the wrong ones (chorus_media_reencodes_total{reason="kv"}). A repeat that
 * asks for audio after a text-only answer adopts that answer's KV and rows as well: skipped, run once, spoken.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, ownSegments, waitFor } from '../helpers/engine.ts';
import { pngBytes } from '../helpers/media.ts';
import { promtoolProblems } from '../helpers/promtool.ts';
import { parsePrometheus } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

// 2 MiB: the short image prompt's blocks (~100 positions of KV and rows) fit, the long one's (~1,000) do not.
// kv_prediction_ms: main's belief that an ended prompt's blocks are held outlives the test, so whether a repeat is
// skipped depends on what main believes and the cache holds, not on how soon after the first answer it is routed.
const yaml = `
kv_prediction_ms: 600000
stages:
  - stage_id: image-encoder
    kind: encoder
    engine: {threads: 1}
    encoder: {modality: image, cache_bytes: 1}
  - stage_id: thinker
    kind: thinker
    engine: {threads: 1, prefix_cache: {max_bytes: 2MiB, block_positions: 16}}
    inputs: [{from: image-encoder}]
    final_output: true
    final_output_type: text
  - stage_id: talker
    kind: talker
    engine: {threads: 1}
    inputs: [{from: thinker}]
    default_sampling_params: {max_tokens: 24}
  - stage_id: code2wav
    kind: code2wav
    engine: {threads: 1}
    inputs: [{from: talker}]
    final_output: true
    final_output_type: audio
`;

const ask = (image: Uint8Array, before = '', spoken = false): GenerateRequest => ({
  messages: [
    {
      role: 'user',
      content: [
        ...(before ? [{ type: 'text' as const, text: before }] : []),
        { type: 'image', data: image },
        { type: 'text', text: 'What is in this picture? Say it in a few words.' },
      ],
    },
  ],
  modalities: spoken ? ['text', 'audio'] : ['text'],
  sampling: { maxTokens: 8, ignoreEos: true, seed: 7 },
});

describe('no encode for an image the Thinker holds', () => {
  let served: ServedPipeline | undefined;
  let engine: Orchestrator | undefined;
  let base = '';
  const sent: number[] = [];
  const skipped: string[] = [];
  const reencoded: string[] = [];
  const channels = {
    [channelNames.encoderMedia]: (m: unknown) => sent.push((m as { bytes: number }).bytes),
    [channelNames.mediaEncodeSkipped]: (m: unknown) => skipped.push((m as { modality: string }).modality),
    [channelNames.mediaReencode]: (m: unknown) => reencoded.push((m as { reason: string }).reason),
  };
  const idle = () => waitFor('the Thinker let go', () => engine!.health().every((h) => h.inFlight === 0));
  const read = async (family: string, labels: Record<string, string>) => {
    const samples = parsePrometheus(await (await fetch(`${base}/metrics`)).text()).get(family)?.samples ?? [];
    return samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value ?? 0;
  };
  // The counters are the process's (metrics.ts), which an earlier e2e file in this worker may have counted into
  // (isolate: false): this file counts from what they read when its server started.
  const skips = { family: 'chorus_media_encodes_skipped_total', labels: { modality: 'image' } };
  const reencodes = { family: 'chorus_media_reencodes_total', labels: { reason: 'kv', modality: 'image' } };
  const atStart = new Map<object, number>();
  const counted = async (m: typeof skips) => (await read(m.family, m.labels)) - atStart.get(m)!;

  beforeAll(async () => {
    for (const [name, fn] of Object.entries(channels)) subscribe(name, fn);
    served = await servePipeline(parseConfig(yaml, `${process.cwd()}/configs/kvheld.yaml`));
    ({ engine, base } = served);
    for (const m of [skips, reencodes]) atStart.set(m, await read(m.family, m.labels));
  }, 240_000);

  afterAll(async () => {
    await served?.close();
    for (const [name, fn] of Object.entries(channels)) unsubscribe(name, fn);
    expect(ownSegments()).toEqual([]);
  });

  it('a repeat of the image prompt is not encoded; its answer is the first one`s', async () => {
    const img = pngBytes(224, 160, 41);
    const a = await collect(engine!.generate(ask(img)));
    expect(a.done.finishReason).toBe('length');
    expect(sent).toEqual([img.byteLength]);
    await idle();
    const b = await collect(engine!.generate(ask(img)));
    expect(b.done.error).toBeUndefined();
    expect(b.text).toBe(a.text);
    expect(sent).toEqual([img.byteLength]); // the image's bytes reached the encoder once
    expect(skipped).toEqual(['image']);
    expect(reencoded).toEqual([]);
    expect(await counted(skips)).toBe(1);
    expect(promtoolProblems(await (await fetch(`${base}/metrics`)).text())).toBe('');
  });

  it('a repeat that asks for audio adopts what a text-only answer left: not encoded, run once, spoken', async () => {
    // The Talker reads the prompt's rows (each position's embedding and hidden state): the cache keeps them beside the
    // KV whoever left it, so an answer that fed no Talker serves one that does.
    const img = pngBytes(224, 160, 43);
    const text = await collect(engine!.generate(ask(img)));
    expect(text.done.finishReason).toBe('length');
    const sentBefore = sent.length;
    await idle();
    const spoken = await collect(engine!.generate(ask(img, '', true)));
    expect(spoken.done.error).toBeUndefined();
    expect(spoken.text).toBe(text.text);
    expect(spoken.pcm.length).toBeGreaterThan(0);
    expect(sent.length).toBe(sentBefore); // not encoded again
    expect(skipped).toEqual(['image', 'image']);
    expect(reencoded).toEqual([]); // nor run again
  });

  it('a skip the cache cannot honour (its blocks are not there) is encoded after all: same answer', async () => {
    const img = pngBytes(224, 160, 42);
    const long = 'Look closely at the colours and the shapes before you answer. '.repeat(16);
    const first = await collect(engine!.generate(ask(img, long)));
    expect(first.done.finishReason).toBe('length');
    const sentBefore = sent.length;
    // Main counts the ended prompt's blocks as held (kv_prediction_ms above); the budget kept none of them past
    // the long text, so the skip is wrong and the Thinker asks for the image.
    await idle();
    const again = await collect(engine!.generate(ask(img, long)));
    expect(skipped).toEqual(['image', 'image', 'image']);
    expect(reencoded).toEqual(['kv']);
    expect(again.done.error).toBeUndefined();
    expect(again.done.finishReason).toBe('length');
    expect(again.text).toBe(first.text);
    expect(sent.slice(sentBefore)).toEqual([img.byteLength]); // encoded after all, once
    expect(await counted(reencodes)).toBe(1);
  });
});
