/**
 * /metrics is valid Prometheus text exposition (parsed properly below), every metric is chorus_*, histograms
 * are consistent, latency histograms count real responses, and the engine's hooks show up.
 */
import { channel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeEdgeChunk, observeStageBatch, reportStageQueueDepth } from '../../src/server/metrics.ts';
import { RealtimeClient, startTestServer } from './serverClient.ts';
import { defaultScript } from './serverTestEngine.ts';

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}
interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** A strict parser for the text format (0.0.4): HELP/TYPE comments and `name{l="v",...} value` samples. */
function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { type: 'untyped', help: '', samples: [] }));
    return f;
  };
  const baseName = (sample: string): string => {
    for (const suffix of ['_bucket', '_sum', '_count']) {
      const base = sample.slice(0, -suffix.length);
      if (sample.endsWith(suffix) && families.get(base)?.type === 'histogram') return base;
    }
    return sample;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      expect(meta[2], line).toMatch(NAME);
      if (meta[1] === 'TYPE') {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(meta[3]);
        family(meta[2]).type = meta[3];
      } else family(meta[2]).help = meta[3];
      continue;
    }
    expect(line.startsWith('#'), `unexpected comment: ${line}`).toBe(false);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/.exec(line);
    expect(m, `bad sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    if (m![3]) {
      const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
      let consumed = 0;
      for (let lm = labelRe.exec(m![3]); lm; lm = labelRe.exec(m![3])) {
        labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
        consumed = labelRe.lastIndex;
      }
      expect(consumed, `bad labels: ${line}`).toBe(m![3].length);
    }
    const value = m![4] === '+Inf' ? Infinity : m![4] === '-Inf' ? -Infinity : Number(m![4]);
    expect(Number.isNaN(value) && m![4] !== 'NaN', `bad value: ${line}`).toBe(false);
    family(baseName(m![1])).samples.push({ name: m![1], labels, value });
  }
  return families;
}

function histogramCount(f: Family | undefined, labels: Record<string, string>): number {
  const s = f?.samples.find((x) => x.name.endsWith('_count') && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
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
    const body = { messages: [{ role: 'user', content: 'x' }], modalities: ['text', 'audio'], audio: { voice: 'a', format: 'pcm16' }, stream: true };
    await (await fetch(`${server.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).text();
    await fetch(`${server.base}/v1/nothing`);

    reportStageQueueDepth('thinker', 3);
    observeStageBatch('talker', 4);
    observeEdgeChunk('thinker', 'talker', 1.5, 4096);
    // What the Orchestrator publishes, picked up by the bridge buildServer installed.
    channel('chorus:stage:stats').publish({
      stageId: 'code2wav', instance: 'code2wav#0', queueDepth: 2, running: 1, batchSize: 2, stepMs: 3,
      batchSizes: [2, 2], edgeSamples: [{ from: 'talker', to: 'code2wav', latencyMs: 0.4, bytes: 1000 }],
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

    const delta = (name: string, labels: Record<string, string>) => histogramCount(after.get(name), labels) - histogramCount(before.get(name), labels);
    expect(delta('chorus_ttft_seconds', { protocol: 'realtime' })).toBe(2);
    expect(delta('chorus_ttfp_seconds', { protocol: 'realtime' })).toBe(2);
    expect(delta('chorus_ttft_seconds', { protocol: 'http' })).toBe(1);
    expect(delta('chorus_ttfp_seconds', { protocol: 'http' })).toBe(1);
    expect(delta('chorus_inter_token_seconds', { protocol: 'realtime' })).toBe(6);

    const errors = after.get('chorus_errors_total')!.samples;
    expect(errors.find((s) => s.labels.code === 'CHORUS_ERR_NOT_FOUND')?.value).toBeGreaterThanOrEqual(1);
    expect(after.get('chorus_stage_queue_depth')!.samples).toContainEqual({ name: 'chorus_stage_queue_depth', labels: { stage: 'thinker' }, value: 3 });
    expect(histogramCount(after.get('chorus_stage_batch_size'), { stage: 'talker' })).toBeGreaterThanOrEqual(1);
    expect(histogramCount(after.get('chorus_edge_chunk_latency_seconds'), { edge: 'thinker->talker' })).toBeGreaterThanOrEqual(1);
    const bytes = after.get('chorus_edge_chunk_bytes')!.samples.find((s) => s.name === 'chorus_edge_chunk_bytes_sum' && s.labels.edge === 'thinker->talker');
    expect(bytes?.value).toBeGreaterThanOrEqual(4096);
    expect(after.get('chorus_responses_total')!.type).toBe('counter');
    expect(after.get('chorus_stage_queue_depth')!.samples).toContainEqual({ name: 'chorus_stage_queue_depth', labels: { stage: 'code2wav#0' }, value: 2 });
    expect(histogramCount(after.get('chorus_stage_batch_size'), { stage: 'code2wav#0' })).toBe(2);
    expect(histogramCount(after.get('chorus_edge_chunk_latency_seconds'), { edge: 'talker->code2wav' })).toBe(1);
    expect(histogramCount(after.get('chorus_edge_chunk_bytes'), { edge: 'code2wav->main' })).toBe(1);
  });
});
