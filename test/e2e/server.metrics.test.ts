/**
 * /metrics is valid Prometheus text exposition (parsed strictly: parsePrometheus in serverClient.ts, and clean for
 * `promtool check metrics`), every metric is chorus_*, histograms are consistent, latency histograms count real
 * responses, the engine's hooks show up, the encoder stages' cumulative cache totals become counters that survive a
 * stage restart, each autoregressive stage's steps, tokens and KV are reported, and the EC-store counters count what
 * main publishes.
 */
import { channel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeEdgeChunk } from '../../src/server/metrics/metrics.ts';
import { parsePrometheus, RealtimeClient, startTestServer, type Family, type Sample } from './serverClient.ts';
import { defaultScript } from './serverTestEngine.ts';
import { promtoolProblems } from '../helpers/promtool.ts';

function histogramCount(f: Family | undefined, labels: Record<string, string>): number {
  const s = f?.samples.find(
    (x) => x.name.endsWith('_count') && Object.entries(labels).every(([k, v]) => x.labels[k] === v),
  );
  return s?.value ?? 0;
}

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer({}, { script: defaultScript({ tokens: 4, chunkSamples: 1200, tokensPerChunk: 1 }) });
});
afterAll(async () => {
  await server.app.close();
});

async function scrape(): Promise<Map<string, Family>> {
  const res = await fetch(`${server.base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parsePrometheus(await res.text());
}

describe('/metrics', () => {
  it('is well-formed, chorus_-only, with consistent histograms that count real responses', async () => {
    const before = await scrape();
    const client = await RealtimeClient.connect(server.wsUrl);
    await client.respond('x');
    client.send({ type: 'response.create', event_id: 'second' });
    await client.next('response.done');
    client.close();
    const body = {
      messages: [{ role: 'user', content: 'x' }],
      modalities: ['text', 'audio'],
      audio: { voice: 'a', format: 'pcm16' },
      stream: true,
    };
    await (
      await fetch(`${server.base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).text();
    await fetch(`${server.base}/v1/nothing`);

    observeEdgeChunk('thinker', 'talker', 1.5, 4096);
    // What the Orchestrator publishes, picked up by the bridge buildServer installed (a report without an instance
    // is labelled by its stage; the test engine has no id, so its reports are the untagged ones).
    channel('chorus:stage:stats').publish({ stageId: 'thinker', queueDepth: 3 });
    channel('chorus:stage:stats').publish({ stageId: 'talker', batchSizes: [4] });
    // Another engine's instance in this process: not this server's.
    channel('chorus:stage:stats').publish({ stageId: 'code2wav', instance: 'code2wav#7', queueDepth: 5, engine: 'x' });
    channel('chorus:stage:stats').publish({
      stageId: 'code2wav',
      instance: 'code2wav#0',
      queueDepth: 2,
      running: 1,
      batchSize: 2,
      stepMs: 3,
      batchSizes: [2, 2],
      edgeSamples: [{ from: 'talker', to: 'code2wav', latencyMs: 0.4, bytes: 1000 }],
    });
    channel('chorus:edge:chunk').publish({ from: 'code2wav', to: 'main', latencyMs: 0.2, bytes: 96000 });

    const after = await scrape();
    for (const [name, f] of after) {
      expect(name.startsWith('chorus_'), name).toBe(true);
      expect(f.help.length, name).toBeGreaterThan(0);
      if (f.type !== 'histogram') continue;
      // Per label set: buckets cumulative (non-decreasing in le), +Inf bucket equals _count.
      const series = new Map<string, Sample[]>();
      for (const s of f.samples.filter((x) => x.name.endsWith('_bucket'))) {
        const { le, ...rest } = s.labels;
        const key = JSON.stringify(rest);
        series.set(key, [...(series.get(key) ?? []), { ...s, value: s.value, labels: { le } }]);
      }
      for (const [key, buckets] of series) {
        const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
        expect(les, `${name} ${key}`).toEqual([...les].sort((a, b) => a - b));
        for (let i = 1; i < buckets.length; i++) expect(buckets[i].value).toBeGreaterThanOrEqual(buckets[i - 1].value);
        expect(les.at(-1)).toBe(Infinity);
        expect(histogramCount(f, JSON.parse(key))).toBe(buckets.at(-1)!.value);
      }
    }

    const delta = (name: string, labels: Record<string, string>) =>
      histogramCount(after.get(name), labels) - histogramCount(before.get(name), labels);
    expect(delta('chorus_ttft_seconds', { protocol: 'realtime' })).toBe(2);
    expect(delta('chorus_ttfp_seconds', { protocol: 'realtime' })).toBe(2);
    expect(delta('chorus_ttft_seconds', { protocol: 'http' })).toBe(1);
    expect(delta('chorus_ttfp_seconds', { protocol: 'http' })).toBe(1);
    expect(delta('chorus_inter_token_seconds', { protocol: 'realtime' })).toBe(6);

    const errors = after.get('chorus_errors_total')!.samples;
    expect(errors.find((s) => s.labels.code === 'CHORUS_ERR_NOT_FOUND')?.value).toBeGreaterThanOrEqual(1);
    expect(after.get('chorus_stage_queue_depth')!.samples).toContainEqual({
      name: 'chorus_stage_queue_depth',
      labels: { stage: 'thinker' },
      value: 3,
    });
    expect(histogramCount(after.get('chorus_stage_batch_size'), { stage: 'talker' })).toBeGreaterThanOrEqual(1);
    expect(
      histogramCount(after.get('chorus_edge_chunk_latency_seconds'), { edge: 'thinker->talker' }),
    ).toBeGreaterThanOrEqual(1);
    const bytes = after
      .get('chorus_edge_chunk_bytes')!
      .samples.find((s) => s.name === 'chorus_edge_chunk_bytes_sum' && s.labels.edge === 'thinker->talker');
    expect(bytes?.value).toBeGreaterThanOrEqual(4096);
    expect(after.get('chorus_responses_total')!.type).toBe('counter');
    expect(after.get('chorus_stage_queue_depth')!.samples).toContainEqual({
      name: 'chorus_stage_queue_depth',
      labels: { stage: 'code2wav#0' },
      value: 2,
    });
    expect(histogramCount(after.get('chorus_stage_batch_size'), { stage: 'code2wav#0' })).toBe(2);
    expect(after.get('chorus_stage_queue_depth')!.samples.map((s) => s.labels.stage)).not.toContain('code2wav#7');
    // The edge histograms are the process's, which an earlier e2e file's pipeline in this worker observed too.
    expect(delta('chorus_edge_chunk_latency_seconds', { edge: 'talker->code2wav' })).toBe(1);
    expect(delta('chorus_edge_chunk_bytes', { edge: 'code2wav->main' })).toBe(1);
  });

  it(
    'turns encoder cache totals (per stage process, reset by a restart) into counters that never go ' + 'down',
    async () => {
      const stats = channel('chorus:stage:stats');
      const died = channel('chorus:stage:died');
      const report = (
        instance: string,
        cacheHits: number,
        cacheMisses: number,
        cacheEvictions: number,
        cacheBytes: number,
      ) =>
        stats.publish({
          stageId: instance.split('#')[0],
          instance,
          queueDepth: 0,
          running: 0,
          batchSize: 0,
          stepMs: 0,
          batchSizes: [],
          edgeSamples: [],
          kind: {
            encoder: {
              cacheHits,
              cacheMisses,
              cacheEvictions,
              cacheBytes,
              cachePinnedBytes: 0,
              cacheEntries: 1,
              cacheBudgetBytes: 1 << 26,
              runs: cacheMisses,
              itemsEncoded: cacheMisses,
              queuedItems: 0,
            },
          },
        });
      const value = (families: Map<string, Family>, name: string, stage: string) =>
        families.get(name)?.samples.find((s) => s.labels.stage === stage)?.value;
      const read = async (stage: string) => {
        const m = await scrape();
        for (const name of [
          'chorus_encoder_cache_hits_total',
          'chorus_encoder_cache_misses_total',
          'chorus_encoder_cache_evictions_total',
        ])
          expect(m.get(name)?.type).toBe('counter');
        expect(m.get('chorus_encoder_cache_bytes')?.type).toBe('gauge');
        return {
          hits: value(m, 'chorus_encoder_cache_hits_total', stage),
          misses: value(m, 'chorus_encoder_cache_misses_total', stage),
          evictions: value(m, 'chorus_encoder_cache_evictions_total', stage),
          bytes: value(m, 'chorus_encoder_cache_bytes', stage),
        };
      };

      report('vision#0', 0, 0, 0, 0);
      // series exist from the first report
      expect(await read('vision#0')).toEqual({ hits: 0, misses: 0, evictions: 0, bytes: 0 });
      report('vision#0', 2, 3, 0, 4096);
      report('vision#0', 5, 4, 1, 8192);
      expect(await read('vision#0')).toEqual({ hits: 5, misses: 4, evictions: 1, bytes: 8192 });
      // The stage dies: its cache is gone. Its successor counts from zero, and whatever it reports first counts whole.
      died.publish({ instance: 'vision#0', code: null, signal: 'SIGKILL' });
      expect((await read('vision#0')).bytes).toBe(0);
      report('vision#0', 6, 1, 0, 1024);
      expect(await read('vision#0')).toEqual({ hits: 11, misses: 5, evictions: 1, bytes: 1024 });
      // A restart seen only as a drop (the death was missed) counts the same way.
      report('vision#0', 2, 1, 0, 512);
      expect(await read('vision#0')).toEqual({ hits: 13, misses: 5, evictions: 1, bytes: 512 });
      // A stage that is not an encoder never gets encoder series, even when it dies.
      died.publish({ instance: 'talker#0', code: 1, signal: null });
      expect((await read('talker#0')).bytes).toBeUndefined();
    },
  );

  it('turns Code2Wav frame totals into counters (the decode ratio) and its held states into a gauge', async () => {
    const stats = channel('chorus:stage:stats');
    const report = (framesDecoded: number, audioFrames: number, states: number) =>
      stats.publish({
        stageId: 'code2wav',
        instance: 'code2wav#1',
        queueDepth: 0,
        running: states,
        batchSize: 0,
        stepMs: 0,
        batchSizes: [],
        edgeSamples: [],
        kind: { code2wav: { framesDecoded, audioFrames, states } },
      });
    const read = async () => {
      const m = await scrape();
      const value = (name: string) => m.get(name)?.samples.find((s) => s.labels.stage === 'code2wav#1')?.value;
      expect(m.get('chorus_code2wav_frames_decoded_total')?.type).toBe('counter');
      expect(m.get('chorus_code2wav_states')?.type).toBe('gauge');
      return [
        value('chorus_code2wav_frames_decoded_total'),
        value('chorus_code2wav_audio_frames_total'),
        value('chorus_code2wav_states'),
      ];
    };
    report(8, 8, 2);
    report(58, 33, 1);
    expect(await read()).toEqual([58, 33, 1]);
    channel('chorus:stage:died').publish({ instance: 'code2wav#1', code: null, signal: 'SIGKILL' });
    expect((await read())[2]).toBe(0); // its states died with it
    report(4, 4, 1); // the successor counts from zero
    expect(await read()).toEqual([62, 37, 1]);
  });

  it('counts EC-store hits by where, misses, and the media bytes that reached each encoder stage', async () => {
    const lookup = channel('chorus:ec:lookup');
    const media = channel('chorus:encoder:media');
    const read = async () => {
      const m = await scrape();
      for (const name of ['chorus_ec_hits_total', 'chorus_ec_misses_total', 'chorus_encoder_media_bytes_total'])
        expect(m.get(name)?.type).toBe('counter');
      const v = (name: string, labels: Record<string, string> = {}) =>
        m.get(name)?.samples.find((s) => Object.entries(labels).every(([k, x]) => s.labels[k] === x))?.value ?? 0;
      return {
        local: v('chorus_ec_hits_total', { where: 'local' }),
        remote: v('chorus_ec_hits_total', { where: 'remote' }),
        misses: v('chorus_ec_misses_total'),
        imageBytes: v('chorus_encoder_media_bytes_total', { stage: 'image-encoder' }),
      };
    };
    const before = await read();
    lookup.publish({ where: 'miss' });
    media.publish({ stage: 'image-encoder', bytes: 1000 });
    lookup.publish({ where: 'remote' });
    lookup.publish({ where: 'local' });
    lookup.publish({ where: 'local' });
    const after = await read();
    expect({
      local: after.local - before.local,
      remote: after.remote - before.remote,
      misses: after.misses - before.misses,
      imageBytes: after.imageBytes - before.imageBytes,
    }).toEqual({ local: 2, remote: 1, misses: 1, imageBytes: 1000 });
  });

  it('reports a Thinker/Talker step by phase, its prompt and generated tokens, its KV against the budget', async () => {
    const stats = channel('chorus:stage:stats');
    const report = (prompt: number, generated: number, kvUsedBytes: number, steps: object[]) =>
      stats.publish({
        stageId: 'thinker',
        instance: 'thinker#1',
        queueDepth: 0,
        running: 1,
        batchSize: 1,
        stepMs: 1,
        batchSizes: [],
        edgeSamples: [],
        steps,
        ar: { promptTokens: prompt, generatedTokens: generated, kvUsedBytes, kvBudgetBytes: 1 << 28 },
      });
    const read = async () => {
      const m = await scrape();
      const value = (name: string) => m.get(name)?.samples.find((s) => s.labels.stage === 'thinker#1')?.value;
      expect(m.get('chorus_stage_prompt_tokens_total')?.type).toBe('counter');
      expect(m.get('chorus_stage_kv_cache_bytes')?.type).toBe('gauge');
      return {
        prompt: value('chorus_stage_prompt_tokens_total'),
        generated: value('chorus_stage_generation_tokens_total'),
        kv: value('chorus_stage_kv_cache_bytes'),
        budget: value('chorus_stage_kv_cache_budget_bytes'),
        prefill: histogramCount(m.get('chorus_stage_step_seconds'), { stage: 'thinker#1', phase: 'prefill' }),
        decode: histogramCount(m.get('chorus_stage_step_seconds'), { stage: 'thinker#1', phase: 'decode' }),
      };
    };
    report(100, 1, 4096, [{ phase: 'prefill', ms: 12 }]);
    report(
      100,
      4,
      5120,
      [1, 2, 3].map(() => ({ phase: 'decode', ms: 0.8 })),
    );
    expect(await read()).toEqual({ prompt: 100, generated: 4, kv: 5120, budget: 1 << 28, prefill: 1, decode: 3 });
    channel('chorus:stage:died').publish({ instance: 'thinker#1', code: null, signal: 'SIGKILL' });
    report(20, 1, 1024, []); // the successor counts from zero; the dead one's KV is gone
    expect(await read()).toMatchObject({ prompt: 120, generated: 5, kv: 1024 });
  });

  it('passes `promtool check metrics` (naming and exposition conventions) with every family reported', async () => {
    // Every family the stats above and the responses of the first test fill in is in this body (histograms with
    // labels, counters, gauges): the check covers what an operator's scrape sees, not an empty registry.
    const res = await fetch(`${server.base}/metrics`);
    const text = await res.text();
    expect(text).toContain('chorus_stage_step_seconds_bucket{');
    expect(promtoolProblems(text)).toBe('');
  });
});
