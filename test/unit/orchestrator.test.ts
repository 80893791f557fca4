/**
 * The Orchestrator without stage processes: in-process stand-ins (test/helpers/fakeWorker.ts) attach the real
 * edges and answer with scripted chunks, so routing, output assembly, cancel, death + restart, boot failure and
 * READY facts are checked in milliseconds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelFacts } from '../../src/common/modelFacts.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, configWith, ownSegments, waitFor } from '../helpers/engine.ts';
import { fakeWorkers, type Script } from '../helpers/fakeWorker.ts';
import { thinkerArgs } from '../helpers/addArgs.ts';

const thinkerFacts: ModelFacts = { kind: 'thinker', vocabSize: 512, hiddenSize: 64, eosTokenId: 2, kvBytesPerToken: 1 };
const talkerFacts: ModelFacts = {
  kind: 'talker',
  conditionDim: 128,
  numCodebooks: 16,
  framesPerToken: 1,
  kvBytesPerToken: 1,
};
/** A vocoder unlike the generated one (16 kHz, 640 samples a frame): main must use what the stage reports. */
const code2wavFacts: ModelFacts = {
  kind: 'code2wav',
  numCodebooks: 16,
  sampleRateHz: 16_000,
  samplesPerFrame: 640,
  receptiveFieldFrames: 16,
};

const threeTokens: Script = () => ({
  bodies: [
    { kind: 'text', tokenIds: [300] },
    { kind: 'text', tokenIds: [301] },
    { kind: 'text', tokenIds: [302] },
  ],
  finishReason: 'length',
});

const request = { messages: [{ role: 'user' as const, content: 'hello' }], modalities: ['text' as const] };
const THREADS = 'threads: 1 # onnxruntime intra-op threads (this is the only stage, but the server shares the cores)';

let engine: Orchestrator | null = null;
afterEach(async () => {
  await engine?.close(1_000);
  engine = null;
  expect(ownSegments()).toEqual([]); // the rings main provisioned are unlinked on close
});

describe('Orchestrator with in-process stage workers', () => {
  it('sends the prompt to the entry stage and turns its chunks into text events and one done', async () => {
    const fakes = fakeWorkers({ thinker: { facts: thinkerFacts, script: threeTokens } });
    engine = await Orchestrator.start(configWith('text-only.yaml'), { startWorker: fakes.startWorker });
    const r = await collect(engine.generate(request));
    const add = fakes.started[0].received.find((m) => m.type === 'add');
    expect(add?.type === 'add' && thinkerArgs(add).promptTokenIds!.length).toBeGreaterThan(0);
    expect(r.events.filter((e) => e.type === 'text').flatMap((e) => (e.type === 'text' ? e.tokenIds : []))).toEqual([
      300, 301, 302,
    ]);
    expect(r.done.finishReason).toBe('length');
    expect(r.done.usage.completionTokens).toBe(3);
    expect(engine.audioOutput).toBeNull(); // no vocoder in this graph
  });

  it('cancel ends the request as cancelled and tells the stage to abort', async () => {
    const fakes = fakeWorkers({ thinker: { facts: thinkerFacts } }); // never answers
    engine = await Orchestrator.start(configWith('text-only.yaml'), { startWorker: fakes.startWorker });
    const handle = engine.generate(request);
    const done = collect(handle);
    handle.cancel();
    expect((await done).done.finishReason).toBe('cancelled');
    expect(fakes.started[0].received).toContainEqual(
      expect.objectContaining({ type: 'abort', requestId: handle.requestId }),
    );
  });

  it('pause and resume reach the stage; a paused request is not counted as load in later admissions', async () => {
    const fakes = fakeWorkers({ thinker: { facts: thinkerFacts } }); // never answers
    engine = await Orchestrator.start(configWith('text-only.yaml'), { startWorker: fakes.startWorker });
    const liveAt = (requestId: string) => {
      const add = fakes.started[0].received.find((m) => m.type === 'add' && m.requestId === requestId);
      return add?.type === 'add' ? add.liveRequests : undefined;
    };
    const a = engine.generate(request);
    a.pause();
    const b = engine.generate(request);
    expect([liveAt(a.requestId), liveAt(b.requestId)]).toEqual([1, 1]); // a, then b beside a paused a
    a.resume();
    const c = engine.generate(request);
    expect(liveAt(c.requestId)).toBe(3);
    const controls = fakes.started[0].received.filter((m) => m.type === 'pause' || m.type === 'resume');
    expect(controls).toEqual([
      { type: 'pause', requestId: a.requestId },
      { type: 'resume', requestId: a.requestId },
    ]);
    for (const h of [a, b, c]) h.cancel();
  });

  it('a stage death fails its requests with STAGE_DIED and starts a new instance', async () => {
    const fakes = fakeWorkers({ thinker: { facts: thinkerFacts } });
    // The failure path: with migration (on by default) the request would be replayed (migrationOrchestrator.test.ts).
    const noMigration = { [THREADS]: 'threads: 1\n      migration: false' };
    engine = await Orchestrator.start(configWith('text-only.yaml', noMigration), { startWorker: fakes.startWorker });
    const done = collect(engine.generate(request));
    fakes.started[0].kill();
    const r = await done;
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_STAGE_DIED');
    await waitFor('the restart', () => engine!.health()[0].status === 'ready' && fakes.started.length === 2);
    expect(engine.health()[0].restarts).toBe(1);
    expect(engine.workerOf('thinker#0')).toBe(fakes.started[1]);
  });

  it('a stage that fails to boot rejects start-up and every started stage is stopped', async () => {
    const fakes = fakeWorkers({ thinker: { facts: thinkerFacts }, talker: { facts: talkerFacts, failBoot: true } });
    await expect(
      Orchestrator.start(configWith('tiny-omni-text-in.yaml'), { startWorker: fakes.startWorker }),
    ).rejects.toMatchObject({ code: 'CHORUS_ERR_STAGE_BOOT' });
    expect(fakes.started.length).toBeGreaterThan(0);
    expect(fakes.started.every((w) => w.stopped)).toBe(true);
  });

  it("audio format and usage come from the vocoder's READY facts, not from the config", async () => {
    const pcm = new Float32Array(3 * 640).fill(0.25); // three frames at 640 samples each
    const fakes = fakeWorkers({
      thinker: { facts: thinkerFacts, script: threeTokens },
      talker: { facts: talkerFacts },
      code2wav: {
        facts: code2wavFacts,
        script: () => ({ bodies: [{ kind: 'audio', pcm, sampleRateHz: 16_000 }], finishReason: 'stop' }),
      },
    });
    engine = await Orchestrator.start(configWith('tiny-omni-text-in.yaml'), { startWorker: fakes.startWorker });
    expect(engine.audioOutput).toEqual({ sampleRateHz: 16_000, samplesPerFrame: 640, framesPerToken: 1 });
    const r = await collect(engine.generate({ ...request, modalities: ['text', 'audio'] }));
    expect(r.pcm.length).toBe(pcm.length);
    expect(r.done.usage.audioFrames).toBe(3);
    expect(r.done.usage.audioSeconds).toBeCloseTo(0.12, 6);
  });
});
