/**
 * Request migration on real stage processes (issue 30): with engine.migration on, a Thinker, Talker or Code2Wav
 * killed mid-answer (one replica: the restarted process takes the request over), or a Talker stopped and replaced by
 * the hang watch, costs the client a pause, not its answer: the text is the undisturbed answer's, the audio equal to
 * it within one pcm16 step and as long (nothing delivered twice, nothing lost). The same over the server, for a
 * streaming chat completion and a Realtime response, and /metrics counts the migrations. One engine serves every case.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { GenerateRequest, OutputEvent } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { decodeAudioDeltas, parsePrometheus, RealtimeClient } from './serverClient.ts';
import { collect, configWith, maxPcm16Diff, ownSegments, waitFor, type Collected } from '../helpers/engine.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const MIGRATE = '\n      migration: { max_attempts: 2, max_replay_tokens: 1000 }';
const ask = (maxTokens: number): GenerateRequest => ({
  messages: [{ role: 'user', content: 'Tell me about the sea.' }],
  modalities: ['text', 'audio'],
  sampling: { maxTokens, ignoreEos: true, seed: 3, temperature: 0.8 },
  talkerSampling: { ignoreEos: true, seed: 3 },
});

interface Migrated {
  readonly requestId: string;
  readonly stageId: string;
  readonly reason: string;
  readonly outcome: string;
  readonly waitMs?: number;
  readonly pauseMs?: number;
}

let served: ServedPipeline | undefined;
let engine: Orchestrator;
let port: number;
const migrated: Migrated[] = [];
const onMigrated = (m: unknown) => migrated.push(m as Migrated);

beforeAll(async () => {
  subscribe(channelNames.requestMigrated, onMigrated);
  const talkerBatch = 'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too';
  served = await servePipeline(
    configWith('tiny-omni-text-in.yaml', {
      'threads: 1 # onnxruntime intra-op threads; keep the sum over stages <= cores': `threads: 1${MIGRATE}`,
      [talkerBatch]: `${talkerBatch}${MIGRATE}`,
      'threads: 1 # 1 thread beat 2 for conv graphs on this machine': `threads: 1${MIGRATE}`,
    }),
  );
  ({ engine, port } = served);
}, 120_000);

afterAll(async () => {
  unsubscribe(channelNames.requestMigrated, onMigrated);
  await served?.close();
  expect(ownSegments()).toEqual([]);
});

beforeEach(async () => {
  await waitFor('every stage ready', () => engine.health().every((h) => h.status === 'ready'), 60_000);
});

/** The report of the request's migration, printed with the pause it cost (the restart it waited for beside it). */
function migrationOf(requestId: (m: Migrated) => boolean, stageId: string): Migrated {
  const m = migrated.find((x) => requestId(x) && x.outcome === 'migrated');
  expect(m).toMatchObject({ stageId });
  console.log(
    `migration of ${stageId} (${m!.reason}): the client's pause was ${m!.pauseMs} ms, ` +
      `${m!.waitMs} ms of it waiting for the restarted instance`,
  );
  expect(m!.pauseMs).toBeGreaterThanOrEqual(m!.waitMs!);
  return m!;
}

describe('request migration in the engine', () => {
  let reference: Collected;
  beforeAll(async () => {
    reference = await collect(engine.generate(ask(40)));
  });

  /** The answer with `disturb` done to it once, at its `atAudio`th audio packet; checked against the reference. */
  async function disturbed(stageId: string, atAudio: number, disturb: (pid: number) => void): Promise<Migrated> {
    const worker = engine.workerOf(`${stageId}#0`)!;
    const handle = engine.generate(ask(40));
    const r = await collect(handle, (e: OutputEvent) => {
      if (e.type === 'audio' && e.seq === atAudio) disturb(worker.pid!);
    });
    expect(r.done.error).toBeUndefined();
    expect(r.done.finishReason).toBe('length');
    expect(r.text).toBe(reference.text);
    expect(r.done.usage.completionTokens).toBe(40);
    expect(r.pcm.length).toBe(reference.pcm.length);
    expect(maxPcm16Diff(r.pcm, reference.pcm)).toBeLessThanOrEqual(1);
    const seqs = r.events.flatMap((e) => (e.type === 'audio' ? [e.seq] : []));
    expect(seqs).toEqual(seqs.map((_, i) => i)); // one stream: no packet again, none missing
    expect(engine.workerOf(`${stageId}#0`)!.pid).not.toBe(worker.pid); // the restarted process took it over
    return migrationOf((m) => m.requestId === handle.requestId, stageId);
  }

  const kill = (pid: number) => process.kill(pid, 'SIGKILL');

  it('a Thinker killed mid-answer: the answer completes, identical', async () => {
    expect(await disturbed('thinker', 0, kill)).toMatchObject({ reason: 'died' });
  }, 60_000);

  it('a Talker killed mid-answer: the answer completes, identical', async () => {
    expect(await disturbed('talker', 0, kill)).toMatchObject({ reason: 'died' });
  }, 60_000);

  it('a Code2Wav killed mid-answer: the answer completes, identical', async () => {
    expect(await disturbed('code2wav', 1, kill)).toMatchObject({ reason: 'died' });
  }, 60_000);

  it('a Talker stopped and replaced by the hang watch: the answer completes, identical', async () => {
    expect(await disturbed('talker', 0, (pid) => process.kill(pid, 'SIGSTOP'))).toMatchObject({ reason: 'hung' });
  }, 60_000);
});

const killStage = (stageId: string) => process.kill(engine.workerOf(`${stageId}#0`)!.pid!, 'SIGKILL');

describe('request migration over the server', () => {
  /** A streaming chat completion with audio: its text and pcm16, `onAudio` called at its first audio delta. */
  async function chat(onAudio: () => void = () => {}): Promise<{ text: string; pcm: Int16Array; id: string }> {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'Tell me about the sea.' }],
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'pcm16' },
        stream: true,
        max_tokens: 60,
        seed: 3,
        temperature: 0,
      }),
    });
    expect(res.status).toBe(200);
    let text = '';
    let id = '';
    const audio: Buffer[] = [];
    let buffered = '';
    for await (const part of res.body!) {
      buffered += Buffer.from(part).toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const chunk = JSON.parse(line.slice(6)) as {
          id: string;
          error?: unknown;
          choices: { delta: { content?: string; audio?: { data?: string } } }[];
        };
        expect(chunk.error).toBeUndefined();
        id = chunk.id;
        const delta = chunk.choices[0]?.delta ?? {};
        text += delta.content ?? '';
        if (delta.audio?.data) {
          if (audio.length === 0) onAudio();
          audio.push(Buffer.from(delta.audio.data, 'base64'));
        }
      }
    }
    const bytes = Buffer.concat(audio);
    return { text, pcm: new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)), id };
  }

  /** A Realtime response on a new session: its transcript and pcm16, `onAudio` called at its first audio delta. */
  async function realtime(onAudio: () => void = () => {}): Promise<{ text: string; pcm: Int16Array; id: string }> {
    const client = await RealtimeClient.connect(`ws://127.0.0.1:${port}/v1/realtime`);
    try {
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea.' }] },
      });
      client.send({ type: 'response.create', response: { max_output_tokens: 60 } });
      const created = await client.next('response.created');
      await client.next('response.output_audio.delta', () => true, 30_000);
      onAudio();
      const done = await client.next('response.done', () => true, 60_000);
      // The answer runs to its cap: incomplete, for max_output_tokens, as an undisturbed one does (not failed).
      expect(done.response).toMatchObject({ status: 'incomplete', status_details: { reason: 'max_output_tokens' } });
      const text = client
        .ofType('response.output_audio_transcript.delta')
        .map((e) => e.delta as string)
        .join('');
      const id = (created.response as { id: string }).id;
      return { text, pcm: decodeAudioDeltas(client.events, id), id };
    } finally {
      client.close();
    }
  }

  const pcm16Diff = (a: Int16Array, b: Int16Array) => a.reduce((most, v, i) => Math.max(most, Math.abs(v - b[i])), 0);

  it('a streaming chat completion whose Talker is killed mid-answer completes, identical', async () => {
    const before = migrated.length;
    const reference = await chat();
    const r = await chat(() => killStage('talker'));
    expect(r.text).toBe(reference.text);
    expect(r.pcm.length).toBe(reference.pcm.length);
    expect(pcm16Diff(r.pcm, reference.pcm)).toBeLessThanOrEqual(1);
    migrationOf((m) => migrated.indexOf(m) >= before, 'talker');
  }, 60_000);

  it('a Realtime response whose Code2Wav is killed mid-answer completes, identical; /metrics counts it', async () => {
    const before = migrated.length;
    const reference = await realtime();
    const r = await realtime(() => killStage('code2wav'));
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.text).toBe(reference.text);
    expect(r.pcm.length).toBe(reference.pcm.length);
    expect(pcm16Diff(r.pcm, reference.pcm)).toBeLessThanOrEqual(1);
    migrationOf((m) => migrated.indexOf(m) >= before, 'code2wav');
    const metrics = parsePrometheus(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    const count = (stage: string) =>
      metrics
        .get('chorus_migrations_total')!
        .samples.find((x) => x.labels.stage === stage && x.labels.reason === 'died' && x.labels.outcome === 'migrated')
        ?.value ?? 0;
    expect(count('code2wav')).toBeGreaterThanOrEqual(1);
    const pauses = metrics.get('chorus_migration_pause_seconds')!.samples;
    expect(pauses.find((x) => x.name.endsWith('_count') && x.labels.stage === 'code2wav')?.value).toBeGreaterThan(0);
  }, 60_000);
});
