/**
 * Request migration on real stage processes (issue 30): with engine.migration on, a Thinker, Talker or Code2Wav
 * killed mid-answer (one replica: the restarted process takes the request over), or a Talker stopped and replaced by
 * the hang watch, costs the client a pause, not its answer: the text is the undisturbed answer's, the audio equal to
 * it within one pcm16 step and as long (nothing delivered twice, nothing lost). One engine serves every case.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { GenerateRequest, OutputEvent } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, configWith, maxPcm16Diff, ownSegments, waitFor, type Collected } from '../helpers/engine.ts';

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
  readonly pauseMs?: number;
}

describe('request migration', () => {
  let engine: Orchestrator;
  let reference: Collected;
  const migrated: Migrated[] = [];
  const onMigrated = (m: unknown) => migrated.push(m as Migrated);

  beforeAll(async () => {
    subscribe(channelNames.requestMigrated, onMigrated);
    const talkerBatch = 'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too';
    engine = await Orchestrator.start(
      configWith('tiny-omni-text-in.yaml', {
        'threads: 1 # onnxruntime intra-op threads; keep the sum over stages <= cores': `threads: 1${MIGRATE}`,
        [talkerBatch]: `${talkerBatch}${MIGRATE}`,
        'threads: 1 # 1 thread beat 2 for conv graphs on this machine': `threads: 1${MIGRATE}`,
      }),
    );
    reference = await collect(engine.generate(ask(40)));
  }, 120_000);

  afterAll(async () => {
    unsubscribe(channelNames.requestMigrated, onMigrated);
    await engine?.close();
    expect(ownSegments()).toEqual([]);
  });

  beforeEach(async () => {
    await waitFor('every stage ready', () => engine.health().every((h) => h.status === 'ready'), 60_000);
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
    const m = migrated.find((x) => x.requestId === handle.requestId && x.outcome === 'migrated');
    expect(m).toMatchObject({ stageId });
    console.log(`migration of ${stageId} (${m!.reason}): the client's pause was ${m!.pauseMs} ms`);
    return m!;
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
