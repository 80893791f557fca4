/**
 * Kind messages on the control plane: the control checks check the `{type: 'kind'}` envelope only (the old
 * per-kind top-level types are gone from the protocol), and the request events' reader checks the body: a kind reads
 * only the events it knows, with their fields, and ignores the rest (a remote channel can carry a foreign writer's
 * garbage); main sends a request's first audio only to the kinds that act on it.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import {
  firstAudioMessage,
  mediaFailedMessage,
  releasePrefixMessage,
  requestEventOf,
} from '../../stages/requestEvents.ts';
import { mainToStageProblem } from '../../src/control/controlChecks.ts';
import type { StagePool } from '../../src/engine/pool/StagePool.ts';
import { tellFirstAudio } from '../../src/engine/requests/tellStages.ts';
import type { MainToStage } from '../../src/worker/messages.ts';
import type { StageSendOptions } from '../../src/worker/StageWorker.ts';
import { configWith } from '../helpers/engine.ts';

const died = { code: ErrorCodes.STAGE_DIED, message: 'stage image-encoder#0 died' };

describe('kind messages', () => {
  it('pass the control checks as an envelope with an object body, the request id optional', () => {
    expect(mainToStageProblem(firstAudioMessage('r'))).toBeNull();
    expect(mainToStageProblem(releasePrefixMessage('sess'))).toBeNull();
    expect(mainToStageProblem(mediaFailedMessage('r', 'image-encoder#0', died))).toBeNull();
    expect(mainToStageProblem({ type: 'kind', requestId: 'r' })).toMatch(/body: Expected required property/);
    expect(mainToStageProblem({ type: 'kind', body: 'stop' })).toMatch(/body: Expected object/);
    expect(mainToStageProblem({ type: 'kind', requestId: 5, body: {} })).toMatch(/requestId: Expected string/);
  });

  it('are the only way kind-only messages travel: the old top-level types are not in the protocol', () => {
    for (const type of ['first_audio', 'release_prefix', 'media_failed'])
      expect(mainToStageProblem({ type, requestId: 'r', key: 'k' })).toMatch(/not a message type of this protocol/);
  });

  it('read as request events only when the body is one, with its fields', () => {
    expect(requestEventOf({ type: 'first_audio' })).toEqual({ type: 'first_audio' });
    expect(requestEventOf({ type: 'release_prefix', key: 'k' })).toEqual({ type: 'release_prefix', key: 'k' });
    const failed = mediaFailedMessage('r', 'image-encoder#0', died);
    expect(failed.type === 'kind' && requestEventOf(failed.body)).toEqual({
      type: 'media_failed',
      fromInstance: 'image-encoder#0',
      error: died,
    });
    for (const garbage of [
      null,
      'first_audio',
      { type: 'release_prefix' },
      { type: 'media_failed', fromInstance: 'x', error: 5 },
      { type: 'stop' }, // another kind's
    ])
      expect(requestEventOf(garbage)).toBeNull();
  });
});

describe('tellFirstAudio (main)', () => {
  it("tells the request's instances whose kind acts on it then, and wakes no other (Code2Wav, the encoders)", () => {
    const graph = configWith('tiny-omni.yaml');
    const instances = new Map(graph.stages.map((spec) => [`${spec.stageId}#0`, { spec, inFlight: new Set(['r']) }]));
    const sent: { instance: string; msg: MainToStage; computesAtOnce: boolean }[] = [];
    const pool = {
      instances: instances as unknown as StagePool['instances'],
      send: (instance: string, msg: MainToStage, opts?: StageSendOptions) =>
        void sent.push({ instance, msg, computesAtOnce: opts?.computesAtOnce === true }),
    };
    const record = {
      runId: 'r',
      instances: new Map([...instances.keys()].map((i) => [i.split('#')[0], i])),
      sendLaterAdds: () => {},
    };
    expect([...record.instances.keys()]).toEqual(expect.arrayContaining(['thinker', 'talker', 'code2wav']));
    // The hold ended before any audio (load arrived): the Talker's first chunk may still be sized for it.
    tellFirstAudio(pool, record, false);
    expect(sent.map((s) => s.instance).sort()).toEqual(['talker#0', 'thinker#0']);
    for (const { msg } of sent) expect(msg).toEqual(firstAudioMessage('r'));
    // Lightly loaded, the held Thinker computes at once when it hears it (main keeps it off its core meanwhile); the
    // Talker only sizes a chunk it has yet to make.
    expect(sent.filter((s) => s.computesAtOnce).map((s) => s.instance)).toEqual(['thinker#0']);
    // The audio is out: the Talker made its first chunk, only the held Thinker has something to do.
    sent.length = 0;
    tellFirstAudio(pool, record, true);
    expect(sent.map((s) => s.instance)).toEqual(['thinker#0']);
    // Busier (three requests on the Thinker), both cores have work: no move.
    for (const id of ['r2', 'r3']) instances.get('thinker#0')!.inFlight.add(id);
    sent.length = 0;
    tellFirstAudio(pool, record, true);
    expect(sent).toEqual([{ instance: 'thinker#0', msg: firstAudioMessage('r'), computesAtOnce: false }]);
    // An instance that left the pool (a lost remote) is told nothing, as the pool would drop it anyway.
    instances.delete('thinker#0');
    sent.length = 0;
    tellFirstAudio(pool, record, false);
    expect(sent.map((s) => s.instance)).toEqual(['talker#0']);
  });
});
