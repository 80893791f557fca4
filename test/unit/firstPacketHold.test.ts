/**
 * The first-packet hold: at light load the Thinker stops after the tokens a request's first audio chunk needs and
 * goes on when main has that audio. The pure sizing (chunkPolicy.ts), main's holds (FirstPacketHolds: ended by the
 * first audio, or all at once when load arrives), the Thinker's hold and release through ThinkerCore with a fake
 * runner, and main's release signal (RequestStream.onAudioStarted: first audio, or audio that ends without any).
 */
import { createServer, get, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ChunkPolicy } from '../../src/common/graph.ts';
import type { TalkerRowsBody, TextBody } from '../../src/common/payloads.ts';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { planHold } from '../../src/engine/admission/planAdmission.ts';
import { RequestRecord } from '../../src/engine/requests/RequestRecord.ts';
import { RequestRegistry } from '../../src/engine/requests/RequestRegistry.ts';
import { RequestStream } from '../../src/engine/RequestStream.ts';
import { firstAudioMessage } from '../../stages/requestEvents.ts';
import { firstChunkCap, firstPacketHoldTokens, initialChunkFrames } from '../../src/sched/chunkPolicy.ts';
import { configWith } from '../helpers/engine.ts';
import { received, resetSeqs } from '../helpers/fakeStage.ts';
import { spokenThinker } from '../helpers/fakeThinkerRunner.ts';

const graph = configWith('tiny-omni.yaml');
const policy: ChunkPolicy = graph.chunkPolicy;
const FPT = 2; // codec frames per text token

describe('firstPacketHoldTokens', () => {
  it('covers exactly the first chunk of the load ladder, only at light load and when on', () => {
    const ic = initialChunkFrames(policy, 1);
    expect(ic).toBe(2);
    expect(firstPacketHoldTokens(policy, 1, FPT)).toBe(1); // frames 0 and 1 are both fed token 0's row
    expect(firstPacketHoldTokens(policy, 2, FPT)).toBe(Math.ceil(initialChunkFrames(policy, 2) / FPT));
    expect(firstPacketHoldTokens(policy, 3, FPT)).toBeUndefined(); // a burst: holding only idles the Thinker
    expect(firstPacketHoldTokens({ ...policy, firstPacketHold: false }, 1, FPT)).toBeUndefined();
    // A request's own first chunk (initial_codec_chunk_frames) is what the hold must cover: 7 frames = 4 tokens
    // (frame 6 is fed token 3's row), and at 3 frames a token 3 tokens (frame 6: token 2).
    expect(firstPacketHoldTokens(policy, 1, FPT, 7)).toBe(4);
    expect(firstPacketHoldTokens(policy, 1, 3, 7)).toBe(3);
  });

  it("caps the Talker's first chunk at the frames the held tokens' rows make", () => {
    for (const fpt of [1, 2, 3])
      for (let hold = 1; hold <= 4; hold++) {
        const cap = firstChunkCap(hold, fpt);
        // Frame k >= 1 is fed the row of token floor(k / fpt): the cap's last frame needs token hold - 1 at most.
        expect(Math.floor((cap - 1) / fpt)).toBeLessThanOrEqual(hold - 1);
        expect(Math.floor(cap / fpt)).toBe(hold); // one frame more would need a token the Thinker holds back
      }
  });
});

/**
 * Main's holds as Orchestrator.generate commits them: the planned hold (planHold), then RequestRegistry.commitHold;
 * a record ends its hold once (RequestRecord.releaseHold), and a released record holds nothing.
 */
class FirstPacketHolds {
  readonly #registry = new RequestRegistry();

  admit(id: string, liveRequests: number, released: string[], audio: boolean): number | undefined {
    const request: GenerateRequest = { messages: [], modalities: audio ? ['text', 'audio'] : ['text'] };
    const hold = planHold(graph, request, liveRequests, FPT);
    const stream = new RequestStream(id, new Map(), [], 0, [], { push: () => '', flush: () => '' }, null, () => {});
    const prompt = { promptTokenIds: [], items: [], spans: [] };
    const parts = { request, prompt, route: null, media: null, ec: null, adapter: { cancel: () => {} } };
    const record = new RequestRecord(stream, parts);
    this.#registry.add(record);
    this.#registry.commitHold(record, hold, () => released.push(id));
    return hold.tokens;
  }

  release(id: string): void {
    this.#registry.get(id)?.releaseHold();
  }

  forget(id: string): void {
    const record = this.#registry.get(id);
    if (record) this.#registry.release(record);
  }

  get size(): number {
    return [...this.#registry.values()].filter((r) => r.held).length;
  }
}

describe('FirstPacketHolds (main)', () => {
  const admitAt = (holds: FirstPacketHolds, id: string, liveRequests: number, released: string[], audio = true) =>
    holds.admit(id, liveRequests, released, audio);

  it('holds at light load, releases once at the first audio, and forgets a request that ended', () => {
    const holds = new FirstPacketHolds();
    const released: string[] = [];
    expect(admitAt(holds, 'a', 1, released)).toBe(firstPacketHoldTokens(policy, 1, FPT));
    expect(admitAt(holds, 'b', 2, released)).toBe(firstPacketHoldTokens(policy, 2, FPT));
    expect(admitAt(holds, 'text', 2, released, false)).toBeUndefined(); // no audio out: nothing to hold for
    holds.release('a');
    holds.release('a');
    holds.forget('b'); // cancelled: its stages dropped it
    holds.release('b');
    expect(released).toEqual(['a']);
    expect(holds.size).toBe(0);
  });

  it('ends every hold when a request is admitted past the light-load rung, with audio or not', () => {
    for (const audio of [true, false]) {
      const holds = new FirstPacketHolds();
      const released: string[] = [];
      admitAt(holds, 'a', 1, released);
      admitAt(holds, 'b', 2, released);
      // A burst arrives: held Thinkers would resume behind its prefills while their listeners have one chunk.
      expect(admitAt(holds, 'c', 3, released, audio)).toBeUndefined();
      expect(released.sort()).toEqual(['a', 'b']);
      holds.release('a'); // its first audio comes later: nothing more to send
      expect(released).toHaveLength(2);
    }
  });
});

describe('ThinkerCore first-packet hold', () => {
  const spec = graph.stages.find((s) => s.kind === 'thinker')!;
  beforeEach(() => resetSeqs());

  function setup(firstPacketTokens: number | undefined, maxTokens = 10) {
    const { core, adapter, runner } = spokenThinker(spec, maxTokens, {
      promptTokenIds: [1, 2, 3, 4, 5],
      ...(firstPacketTokens !== undefined ? { firstPacketTokens } : {}),
    });
    const run = () => {
      let n = 0;
      while (core.step()) if (++n > 1_000) throw new Error('the thinker never stops');
      return n;
    };
    const tokens = () =>
      adapter.to('main').reduce((n, c) => n + ((c.body as TextBody | undefined)?.tokenIds.length ?? 0), 0);
    const rows = () =>
      adapter.to('talker#0').reduce((n, c) => n + ((c.body as TalkerRowsBody | undefined)?.numRows ?? 0), 0);
    const finished = () => adapter.to('main').some((c) => c.final);
    return { core, runner, run, tokens, rows, finished };
  }

  it('writes the held tokens (text and Talker rows), computes nothing until the first audio, then finishes', () => {
    const { core, runner, run, tokens, rows, finished } = setup(3);
    run();
    expect(tokens()).toBe(3);
    expect(rows()).toBe(5 + 3); // prompt rows and one row per sampled token: the Talker can make its first chunk
    expect(finished()).toBe(false);
    const steps = runner.steps.length;
    expect(core.step()).toBe(false); // held: the third token is not fed back
    expect(runner.steps.length).toBe(steps);
    core.onKindMessage('r', firstAudioMessage('r').body);
    run();
    expect(tokens()).toBe(10);
    expect(rows()).toBe(5 + 10);
    expect(finished()).toBe(true);
  });

  it('does not hold without a first-packet budget, nor once the first audio came before the budget was spent', () => {
    const free = setup(undefined);
    free.run();
    expect(free.finished()).toBe(true);
    expect(free.tokens()).toBe(10);

    resetSeqs();
    const early = setup(3);
    early.core.onKindMessage('r', firstAudioMessage('r').body); // e.g. a short first chunk already played
    early.run();
    expect(early.finished()).toBe(true);
    expect(early.tokens()).toBe(10);
  });

  it('an answer shorter than the budget finishes without waiting', () => {
    const { run, tokens, finished } = setup(5, 2);
    run();
    expect(finished()).toBe(true);
    expect(tokens()).toBe(2);
  });

  it("with a hold, prefills a long prompt in two steps and sends the first one's rows before the second runs", () => {
    // chunk_policy.first_prefill_split (0.45): the Talker prefills the first 45% of the rows while the Thinker
    // computes the rest. Without a hold (load) or with a short prompt: one step, as before.
    const prompt = Array.from({ length: 100 }, (_, i) => 1 + i);
    const prefills = (firstPacketTokens: number | undefined, promptTokenIds: number[]) => {
      resetSeqs();
      const { core, adapter, runner } = spokenThinker(spec, 4, {
        promptTokenIds,
        ...(firstPacketTokens !== undefined ? { firstPacketTokens } : {}),
      });
      const rowsAt: number[] = [];
      const atOnce: boolean[] = []; // whether a step asked the loop for the next at once
      for (let n = 0; n < 3 && core.step(); n++) {
        rowsAt.push(
          adapter.to('talker#0').reduce((k, c) => k + ((c.body as TalkerRowsBody | undefined)?.numRows ?? 0), 0),
        );
        atOnce.push(core.takeContinuation());
      }
      const steps = runner.steps.filter((s) => s.numTokens > 1).map((s) => [s.numTokens, s.sample]);
      return { steps, rowsAt, atOnce };
    };
    const held = prefills(1, prompt);
    expect(held.steps).toEqual([
      [45, false],
      [55, true],
    ]);
    expect(held.rowsAt[0]).toBe(45); // the Talker has the first step's rows while the second runs
    expect(held.atOnce).toEqual([true, false]); // the second piece without a turn of the loop, once (then held)
    expect(prefills(undefined, prompt).atOnce).toEqual([false, false, false]);
    expect(prefills(undefined, prompt).steps).toEqual([[100, true]]);
    expect(prefills(1, prompt.slice(0, 63)).steps).toEqual([[63, true]]);
  });
});

describe('RequestStream.onAudioStarted (the release main sends the Thinker)', () => {
  beforeEach(() => resetSeqs());
  const RATE = 24_000;

  function stream() {
    const s = new RequestStream(
      'r',
      new Map(),
      [
        { stageId: 'thinker', type: 'text' },
        { stageId: 'code2wav', type: 'audio' },
      ],
      5,
      [],
      { push: () => 'x', flush: () => '' },
      { sampleRateHz: RATE, samplesPerFrame: 1920, framesPerToken: FPT },
      () => {},
    );
    let calls = 0;
    s.onAudioStarted = () => calls++;
    return { s, calls: () => calls };
  }
  const audio = (samples: number) => ({ kind: 'audio' as const, pcm: new Float32Array(samples), sampleRateHz: RATE });

  it('fires once, after the first audio, not at text or an empty audio chunk', async () => {
    const { s, calls } = stream();
    s.onChunk('thinker', received('r', 'thinker', 'main', { kind: 'text', tokenIds: [7] }));
    s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(0)));
    expect(calls()).toBe(0);
    s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(480)));
    s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(480)));
    expect(calls()).toBe(0); // at the end of this turn
    await afterTurn();
    expect(calls()).toBe(1);
  });

  it('fires when the audio output ends without any audio (a held Thinker must not wait forever)', () => {
    const { s, calls } = stream();
    s.onChunk('code2wav', received('r', 'code2wav', 'main', null, true));
    expect(calls()).toBe(1);
    expect(s.finished).toBe(false); // the text goes on
  });

  it("fires after the first audio's event has reached its subscriber (off the packet's path)", async () => {
    const { s } = stream();
    const order: string[] = [];
    s.onAudioStarted = () => order.push('release');
    s.events.events.subscribe((e) => order.push(e.type));
    s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(480)));
    await afterTurn();
    expect(order).toEqual(['audio', 'release']);
  });

  it('fires once an HTTP response has handed the first audio to its socket (corked until the next tick)', async () => {
    const { s } = stream();
    const atRelease = new Promise<{ corked: number; pending: number }>((resolve, reject) => {
      const server = createServer((_req, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        s.events.events.subscribe((e) => {
          if (e.type === 'audio') res.write(`data: audio ${e.pcm.length}\n\n`);
        });
        s.onAudioStarted = () => {
          resolve({ corked: res.socket!.writableCorked, pending: res.socket!.writableLength });
          res.end();
          server.close();
        };
        s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(480)));
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        get({ port, host: '127.0.0.1', agent: false }, (res) => res.resume()).on('error', reject);
      });
    });
    // The chunk is with the kernel when the stages are woken: not corked, nothing left in the socket's buffer.
    expect(await atRelease).toEqual({ corked: 0, pending: 0 });
  });
});

const afterTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
