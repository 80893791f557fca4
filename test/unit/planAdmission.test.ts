/**
 * The admission plan (src/engine/admission/planAdmission.ts) over configs/tiny-omni.yaml with read-only instance
 * views and no processes: the stages a request runs by its modalities and the EC store's hits, each instance's
 * add (producers first), what main expects back and by when, the media to send, and the first-packet hold. Pure:
 * the same input gives the same plan and leaves the views as they were.
 */
import { describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { planAdmission, routedStages, type AdmissionInput } from '../../src/engine/admission/planAdmission.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { newInstance, type StageInstance } from '../../src/engine/pool/StageInstance.ts';
import { firstPacketHoldTokens } from '../../src/sched/chunkPolicy.ts';
import { EC_STORE, type EcItemPlan } from '../../src/worker/messages.ts';
import { configWith } from '../helpers/engine.ts';
import { encoderArgs, talkerArgs, thinkerArgs } from '../helpers/addArgs.ts';

const graph = configWith('tiny-omni.yaml');
const FPT = 2; // codec frames per text token
const AT = 1_000; // admission time (ms)
const { chunkTimeoutMs } = graph.chunkPolicy;
const audioEncoder = graph.stages.find((s) => s.stageId === 'audio-encoder')!;

/** One ready instance ("<stage>#0") of every stage: the router's choice, as the pool's views. */
const views = new Map<string, StageInstance>(
  graph.stages.map((spec, index) => {
    const view = newInstance(graph, index, 0, `${spec.stageId}#0`);
    view.status = 'ready';
    return [spec.stageId, view];
  }),
);

const textPrompt: PreparedPrompt = { promptTokenIds: [1, 2, 3], items: [], spans: [] };
const audioPrompt: PreparedPrompt = {
  promptTokenIds: [1, 9, 9, 9, 2],
  items: [
    {
      index: 0,
      modality: 'audio',
      part: { type: 'audio', data: new Uint8Array([1, 2, 3]), format: 'pcm16' },
      what: 'messages[0].content[0] (audio)',
      numEmbeddings: 3,
      encoder: audioEncoder,
    },
  ],
  spans: [],
};

function input(modalities: GenerateRequest['modalities'], over: Partial<AdmissionInput> = {}): AdmissionInput {
  const request: GenerateRequest = { messages: [{ role: 'user', content: 'hi' }], modalities };
  return {
    requestId: 'r1',
    request,
    graph,
    prompt: textPrompt,
    routed: views,
    ec: undefined,
    ecDrop: [],
    liveRequests: 1,
    beforeFirstAudio: 1,
    audio: { sampleRateHz: 24_000, samplesPerFrame: 1920, framesPerToken: FPT },
    framesPerToken: FPT,
    admittedAtMs: AT,
    ...over,
  };
}

const ids = (stages: readonly { stageId: string }[]) => stages.map((s) => s.stageId);

describe('planAdmission', () => {
  it('text only: the Thinker alone, its output expected at main within the chunk timeout, no hold', () => {
    const plan = planAdmission(input(['text']));
    expect(ids(plan.stages)).toEqual(['thinker']);
    expect([...plan.instances]).toEqual([['thinker', 'thinker#0']]);
    expect(plan.adds.map((a) => a.instance)).toEqual(['thinker#0']);
    expect(thinkerArgs(plan.adds[0].add).promptTokenIds).toEqual([1, 2, 3]);
    expect(plan.outputs).toEqual([
      {
        stageId: 'thinker',
        type: 'text',
        expect: {
          fromInstance: 'thinker#0',
          fromStageId: 'thinker',
          keyStage: 'thinker',
          firstChunkDeadline: AT + chunkTimeoutMs,
          chunkTimeoutMs,
        },
      },
    ]);
    expect(plan.media).toBeNull();
    expect(plan.hold).toEqual({ endsOtherHolds: false }); // no audio out: nothing to hold for
  });

  it('text and audio: the whole chain, producers first, both outputs, and a hold at light load', () => {
    const plan = planAdmission(input(['text', 'audio']));
    expect(ids(plan.stages)).toEqual(['thinker', 'talker', 'code2wav']);
    expect(plan.adds.map((a) => a.instance)).toEqual(['thinker#0', 'talker#0', 'code2wav#0']);
    expect(plan.outputs.map((o) => [o.stageId, o.type, o.expect.fromInstance])).toEqual([
      ['thinker', 'text', 'thinker#0'],
      ['code2wav', 'audio', 'code2wav#0'],
    ]);
    const tokens = firstPacketHoldTokens(graph.chunkPolicy, 1, FPT);
    expect(tokens).toBeDefined();
    expect(plan.hold).toEqual({ tokens, endsOtherHolds: false });
    // The kinds that read the hold get it (Code2Wav's args have no such field).
    const addOf = (instance: string) => plan.adds.find((a) => a.instance === instance)!.add;
    expect(thinkerArgs(addOf('thinker#0')).firstPacketTokens).toBe(tokens);
    expect(talkerArgs(addOf('talker#0')).firstPacketTokens).toBe(tokens);
    expect(talkerArgs(addOf('talker#0')).playback?.firstPacketDeadlineMs).toBeGreaterThan(AT);
  });

  it("Code2Wav's add waits for the first output at main; without the Thinker's text at main none waits", () => {
    const later = (modalities: GenerateRequest['modalities']) =>
      planAdmission(input(modalities))
        .adds.filter((a) => a.afterFirstOutput)
        .map((a) => a.instance);
    // The Talker, fed by the Thinker, is told at admission; Code2Wav, fed by the Talker, at the Thinker's first text.
    expect(later(['text', 'audio'])).toEqual(['code2wav#0']);
    // Audio alone: main expects nothing of the Thinker, so nothing would send it later: every add goes now.
    expect(later(['audio'])).toEqual([]);
    expect(later(['text'])).toEqual([]);
  });

  it('load past the light-load rung ends every hold; no Talker facts yet or async_chunk off: no hold at all', () => {
    const burst = { liveRequests: 3, beforeFirstAudio: 3 };
    expect(planAdmission(input(['text', 'audio'], burst)).hold).toEqual({ endsOtherHolds: true });
    expect(planAdmission(input(['text'], burst)).hold).toEqual({ endsOtherHolds: true });
    expect(planAdmission(input(['text', 'audio'], { framesPerToken: null })).hold).toEqual({ endsOtherHolds: false });
    const sync = planAdmission({ ...input(['text', 'audio']), graph: { ...graph, asyncChunk: false } });
    expect(sync.hold).toEqual({ endsOtherHolds: false });
  });

  it('beside answers already speaking a newcomer holds as at light load; without first outputs first, not', () => {
    const speaking = { liveRequests: 17, beforeFirstAudio: 1 };
    const tokens = firstPacketHoldTokens(graph.chunkPolicy, 1, FPT);
    expect(planAdmission(input(['text', 'audio'], speaking)).hold).toEqual({ tokens, endsOtherHolds: false });
    // A second newcomer while the first still waits for its audio: still the light-load rung (2).
    const two = planAdmission(input(['text', 'audio'], { liveRequests: 18, beforeFirstAudio: 2 }));
    expect(two.hold.tokens).toBeDefined();
    // prefill_first off on an autoregressive stage: everyone's steps are shared, so every live request is load.
    const stages = graph.stages.map((s) =>
      s.kind === 'talker' ? { ...s, engine: { ...s.engine, prefillFirst: false } } : s,
    );
    const shared = planAdmission({ ...input(['text', 'audio'], speaking), graph: { ...graph, stages } });
    expect(shared.hold).toEqual({ endsOtherHolds: true });
  });

  it("a migrated request's replay holds for nothing and ends no other hold, at any load", () => {
    for (const liveRequests of [1, 3]) {
      const plan = planAdmission(input(['text', 'audio'], { liveRequests, replay: true }));
      expect(plan.hold).toEqual({ endsOtherHolds: false });
      const thinker = plan.adds.find((a) => a.instance === 'thinker#0')!.add;
      expect(thinkerArgs(thinker).firstPacketTokens).toBeUndefined();
    }
  });

  it('media: the encoder runs the item, its bytes go to it, and the first output may wait for its timeout', () => {
    const plan = planAdmission(input(['text'], { prompt: audioPrompt }));
    expect(ids(plan.stages)).toEqual(['audio-encoder', 'thinker']);
    expect(plan.adds.map((a) => a.instance)).toEqual(['audio-encoder#0', 'thinker#0']);
    const encodeItem = { item: 0, modality: 'audio', numEmbeddings: 3, what: 'messages[0].content[0] (audio)' };
    expect(encoderArgs(plan.adds[0].add).encode).toEqual([encodeItem]);
    expect(plan.media!.sends.map((s) => [s.to.instance, s.items.length])).toEqual([['audio-encoder#0', 1]]);
    expect([...plan.media!.routes.encoders.keys()]).toEqual(['audio-encoder#0']);
    expect(plan.media!.routes.thinker).toBe('thinker#0');
    const timeoutMs = audioEncoder.encoder!.timeoutMs;
    expect(plan.outputs[0].expect.firstChunkDeadline).toBe(AT + timeoutMs + chunkTimeoutMs);
  });

  it('an EC store hit: routing saw the encoder, the plan leaves it out and sends nothing', () => {
    const ec = new Map<number, EcItemPlan>([[0, { itemKey: 'k', contentKey: 'c' }]]);
    const ecDrop = [{ contentKey: 'old', seq: 1 }];
    const plan = planAdmission(input(['text'], { prompt: audioPrompt, ec, ecDrop }));
    expect(ids(routedStages(graph, input(['text']).request, audioPrompt))).toContain('audio-encoder');
    expect(ids(plan.stages)).toEqual(['thinker']);
    expect(plan.media!.sends).toEqual([]);
    const thinker = thinkerArgs(plan.adds[0].add);
    expect(thinker.media!.items[0].from).toEqual({ instance: EC_STORE, stageId: EC_STORE });
    expect(thinker.ecDrop).toEqual(ecDrop);
  });

  it('routing considers every item: the stages of a media request include its encoder, hit or miss', () => {
    const request: GenerateRequest = { messages: [], modalities: ['text'] };
    expect(ids(routedStages(graph, request, audioPrompt))).toEqual(['audio-encoder', 'thinker']);
    expect(ids(routedStages(graph, request, textPrompt))).toEqual(['thinker']);
  });

  it('is pure: the same input gives the same plan, and the views are left as they were', () => {
    const a = input(['text', 'audio'], { prompt: audioPrompt });
    expect(planAdmission(a)).toEqual(planAdmission(a));
    for (const view of views.values()) expect(view.inFlight.size).toBe(0);
  });
});
