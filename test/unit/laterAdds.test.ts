/**
 * The adds that wait for a request's first output (src/engine/stageAdds.ts addsAfterFirstOutput): counted on their
 * instance at admission, sent once, at the first chunk that reaches main or before any other message main sends
 * the request's stages (an abort of a request a stage never saw would get no `finished`, and the instance would count
 * it as load for good).
 */
import { describe, expect, it } from 'vitest';
import { deliverOutputs } from '../../src/engine/requests/deliverOutputs.ts';
import { RequestRecord } from '../../src/engine/requests/RequestRecord.ts';
import type { RequestRegistry } from '../../src/engine/requests/RequestRegistry.ts';
import type { RequestStream } from '../../src/engine/RequestStream.ts';
import { tellStages } from '../../src/engine/requests/tellStages.ts';
import type { StagePool } from '../../src/engine/pool/StagePool.ts';
import type { MainToStage } from '../../src/worker/messages.ts';
import type { Arrival } from '../../transport/registry.ts';

const INSTANCES = new Map([
  ['thinker', 'thinker#0'],
  ['code2wav', 'code2wav#0'],
]);

function setup() {
  const sent: string[] = [];
  const chunks: string[] = [];
  const pool = {
    instances: new Map() as unknown as StagePool['instances'],
    send: (instance: string, msg: MainToStage) => void sent.push(`${msg.type} ${instance}`),
  };
  const stream = {
    requestId: 'r',
    stageInstances: INSTANCES,
    firstTextAtMs: null,
    firstAudioAtMs: null,
    onChunk: (from: string) => void chunks.push(`${from} (sent: ${sent.join(', ')})`),
  } as unknown as RequestStream;
  const parts = { request: { messages: [] }, prompt: {}, route: null, media: null, ec: null, adapter: { cancel() {} } };
  const record = new RequestRecord(stream, parts as unknown as ConstructorParameters<typeof RequestRecord>[1]);
  record.addsAfterFirstOutput(() => pool.send('code2wav#0', { type: 'add' } as MainToStage));
  return { sent, chunks, pool, record };
}

const arrival = (from: string) => ({ requestId: 'r', chunk: { meta: { from }, bytes: 1 } }) as unknown as Arrival;

describe('adds after the first output', () => {
  it('go at the first chunk that reaches main, before main handles it, and once', () => {
    const { sent, chunks, record } = setup();
    expect(sent).toEqual([]);
    const requests = { ofRun: () => record } as unknown as RequestRegistry;
    deliverOutputs([arrival('thinker')], requests);
    deliverOutputs([arrival('thinker')], requests);
    expect(sent).toEqual(['add code2wav#0']);
    expect(chunks[0]).toBe('thinker (sent: add code2wav#0)');
  });

  it('go before an abort, a pause or a resume of a request that has no output yet, once', () => {
    const { sent, pool, record } = setup();
    tellStages(pool, record, 'pause');
    tellStages(pool, record, 'abort');
    expect(sent).toEqual([
      'add code2wav#0',
      'pause thinker#0',
      'pause code2wav#0',
      'abort thinker#0',
      'abort code2wav#0',
    ]);
  });
});
