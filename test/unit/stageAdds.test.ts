/**
 * The `add` each chosen stage instance gets when main admits a request (src/engine/stageAdds.ts): in graph order
 * (producers first), the prompt and media plan only to the entry stage, each encoder its own items, outputs wired
 * to main, encoder deadlines from their timeout, and chunks without left context only when the chosen Code2Wav
 * instance said it keeps vocoder state, and the Thinker the audio a spoken answer's token voices (speech lead).
 */
import { describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { newInstance as newSlot, type StageInstance as Slot } from '../../src/engine/pool/StageInstance.ts';
import { stageAdds, upstreamSources } from '../../src/engine/stageAdds.ts';
import { stagesFor } from '../../src/engine/planEdges.ts';
import type { RequestMediaPlan } from '../../src/engine/MediaRoutes.ts';
import type { StageWorkerHandle } from '../../src/engine/stageWorkers.ts';
import { LIGHT_LOAD_MAX_LIVE } from '../../src/sched/chunkPolicy.ts';
import { startsAtOnce } from '../../src/worker/StageWorker.ts';
import { configWith } from '../helpers/engine.ts';
import { encoderArgs, talkerArgs, thinkerArgs } from '../helpers/addArgs.ts';

const graph = configWith('tiny-omni.yaml');
const request: GenerateRequest = { messages: [{ role: 'user', content: 'hi' }], modalities: ['text', 'audio'] };

function chosenFor(stageIds: readonly string[], statefulVocoder: boolean): Map<string, Slot> {
  return new Map(
    stageIds.map((id) => {
      const index = graph.stages.findIndex((s) => s.stageId === id);
      const slot = newSlot(graph, index, 0, `${id}#0`);
      if (id === 'talker') {
        const facts = { kind: 'talker', conditionDim: 8, numCodebooks: 16, framesPerToken: 2, kvBytesPerToken: 8 };
        slot.worker = { settings: { facts } } as unknown as StageWorkerHandle;
      }
      if (id === 'code2wav') {
        const facts = { kind: 'code2wav', numCodebooks: 16, sampleRateHz: 24_000, samplesPerFrame: 1920 };
        slot.worker = {
          settings: { facts: { ...facts, receptiveFieldFrames: 4, stateful: statefulVocoder } },
        } as unknown as StageWorkerHandle;
      }
      return [id, slot];
    }),
  );
}

const PLAYBACK = { firstPacketDeadlineMs: 1_250, ttfpTargetMs: null, frameMs: 80, downstreamMs: 0 };

function admit(statefulVocoder: boolean, media: RequestMediaPlan | null = null, playback?: typeof PLAYBACK) {
  const stages = stagesFor(graph, request.modalities, media ? ['audio'] : []);
  const chosen = chosenFor(
    stages.map((s) => s.stageId),
    statefulVocoder,
  );
  return stageAdds({
    requestId: 'r1',
    request,
    graph,
    stages,
    outputs: stages.filter((s) => s.finalOutput),
    chosen,
    promptTokenIds: [1, 2, 3],
    media,
    ecDrop: [],
    upstreamOf: upstreamSources(graph, chosen, 1_000),
    liveRequests: 1,
    firstChunkDeadline: 31_000,
    admittedAtMs: 1_000,
    playback,
  });
}

describe('stageAdds', () => {
  it('adds the entry stage first (its model starts first); the entry gets the prompt; outputs go to main', () => {
    const adds = admit(false);
    expect(adds.map((a) => a.add.requestId)).toEqual(['r1', 'r1', 'r1']);
    expect(adds.map((a) => a.slot.instance)).toEqual(['thinker#0', 'talker#0', 'code2wav#0']);
    const [thinker, talker, code2wav] = adds.map((a) => a.add);
    expect(thinkerArgs(thinker).promptTokenIds).toEqual([1, 2, 3]);
    expect(thinkerArgs(talker).promptTokenIds).toBeUndefined();
    // Each add says when main admitted the request (a stage measures from it how long its input takes).
    expect(adds.map((a) => a.add.admittedAtMs)).toEqual([1_000, 1_000, 1_000]);
    expect(thinker.downstream).toEqual([
      { instance: 'talker#0', stageId: 'talker' },
      { instance: 'main', stageId: 'main' },
    ]);
    expect(code2wav.downstream).toEqual([{ instance: 'main', stageId: 'main' }]);
    expect(code2wav.upstreams).toEqual([{ instance: 'talker#0', stageId: 'talker' }]);
    expect(talkerArgs(talker).codecLeftContextFrames).toBeUndefined(); // a stateless vocoder needs the context
  });

  it("tells the Thinker a spoken answer's audio per token (speech lead): Talker frames per token x a frame", () => {
    const thinker = (playback?: typeof PLAYBACK) => thinkerArgs(admit(false, null, playback)[0].add);
    expect(thinker(PLAYBACK).speechMsPerToken).toBe(2 * 80);
    expect(thinker().speechMsPerToken).toBeUndefined(); // no playback plan: no audio out, nothing to pace
  });

  it('sends chunks without left context when the chosen Code2Wav keeps vocoder state', () => {
    const talker = admit(true).find((a) => a.slot.spec.kind === 'talker')!.add;
    expect(talkerArgs(talker).codecLeftContextFrames).toBe(0);
  });

  it('gives each encoder its items (encoders from main) and the Thinker the media plan with encoder deadlines', () => {
    const item = { item: 0, modality: 'audio' as const, what: 'audio', numEmbeddings: 10 };
    const media = {
      thinker: { spans: [], items: [] },
      encode: new Map([['audio-encoder#0', [item]]]),
    } as unknown as RequestMediaPlan;
    const adds = admit(false, media);
    expect(adds[0].slot.instance).toBe('audio-encoder#0'); // an encoder before the Thinker it feeds
    const encoder = adds[0].add;
    expect(encoderArgs(encoder).encode).toEqual([item]);
    expect(encoder.upstreams).toEqual([{ instance: 'main', stageId: 'main' }]);
    const thinker = adds.find((a) => a.slot.instance === 'thinker#0')!.add;
    expect(thinkerArgs(thinker).media).toBe(media.thinker);
    const timeoutMs = graph.stages.find((s) => s.stageId === 'audio-encoder')!.encoder!.timeoutMs;
    expect(thinker.upstreams).toEqual([
      {
        instance: 'audio-encoder#0',
        stageId: 'audio-encoder',
        firstChunkDeadline: 1_000 + timeoutMs,
        chunkTimeoutMs: timeoutMs,
        timeoutSetting: "the encoder's timeout_ms (stage audio-encoder)",
      },
    ]);
  });

  it("is moved off main's core only where it starts a model at once: a text prompt's entry, light load", () => {
    const [thinker, talker, code2wav] = admit(false).map((a) => a.add);
    expect([thinker, talker, code2wav].map(startsAtOnce)).toEqual([true, false, false]);
    expect(startsAtOnce({ ...thinker, liveRequests: LIGHT_LOAD_MAX_LIVE })).toBe(true);
    expect(startsAtOnce({ ...thinker, liveRequests: LIGHT_LOAD_MAX_LIVE + 1 })).toBe(false); // busier: no move
    expect(startsAtOnce({ ...thinker, liveRequests: undefined })).toBe(false); // load not told: no move
    const item = { item: 0, modality: 'audio' as const, what: 'audio', numEmbeddings: 10 };
    const media = {
      thinker: { spans: [], items: [] },
      encode: new Map([['audio-encoder#0', [item]]]),
    } as unknown as RequestMediaPlan;
    // With media the Thinker waits for its encoder's rows, and the encoder for main's bytes.
    expect(admit(false, media).map((a) => startsAtOnce(a.add))).toEqual([false, false, false, false]);
  });
});
