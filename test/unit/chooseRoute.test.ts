import { describe, expect, it } from 'vitest';
import {
  chooseRoute,
  type EcLookup,
  type EncoderLoad,
  type LoadSnapshot,
  type ThinkerLoad,
} from '../../src/engine/routing/chooseRoute.ts';
import { ROUTE_DEFAULTS } from '../../src/engine/routing/Router.ts';

const thinker = (instance: string, queuedPrefillTokens: number, rate: number | null, inFlight = 0): ThinkerLoad => ({
  instance,
  queuedPrefillTokens,
  prefillTokensPerSecond: rate,
  inFlight,
});

const audioEncoder = (instance: string, queuedRows: number, secondsPerRow: number | null): EncoderLoad => ({
  instance,
  stageId: 'audio-encoder',
  modality: 'audio',
  queuedRows,
  secondsPerRow,
  inFlight: 0,
});

const miss: EcLookup = () => null;

function snapshot(thinkers: ThinkerLoad[], encoders: EncoderLoad[] = [], ecLookup: EcLookup = miss): LoadSnapshot {
  return { thinkers, encoders, ecLookup, defaults: ROUTE_DEFAULTS };
}

const clip = { index: 0, modality: 'audio' as const, numEmbeddings: 750, stageId: 'audio-encoder' };

describe('chooseRoute (estimated TTFT = max(queue wait, encode) + prefill)', () => {
  it('prefers the Thinker instance with the shorter queue', () => {
    const s = snapshot([thinker('thinker#0', 3000, 1000), thinker('thinker#1', 200, 1000)]);
    const choice = chooseRoute(s, { promptTokens: 100, items: [] })!;
    expect(choice.thinker).toBe('thinker#1');
    expect(choice.reason).toBe('shorter_queue');
    expect(choice.predictedTtftSeconds).toBeCloseTo(0.2 + 0.1, 6);
  });

  it('prefers a measured-faster instance over a slightly shorter queue', () => {
    const s = snapshot([thinker('thinker#0', 1000, 500), thinker('thinker#1', 1500, 5000)]);
    const choice = chooseRoute(s, { promptTokens: 100, items: [] })!;
    expect(choice.thinker).toBe('thinker#1');
    expect(choice.reason).toBe('faster');
  });

  it('takes estimates within a few ms (or a quarter) of the lowest as a tie: fewest in flight wins', () => {
    // 30 tokens: 7.5 ms at 4000 tokens/s with 10 in flight against 8.6 ms at 3500 with 1: a tie.
    const close = snapshot([thinker('thinker#0', 0, 4000, 10), thinker('thinker#1', 0, 3500, 1)]);
    expect(chooseRoute(close, { promptTokens: 30, items: [] })!.thinker).toBe('thinker#1');
    // 0.75 ms against 8.6 ms is not noise: the faster one, however busy.
    const apart = snapshot([thinker('thinker#0', 0, 40_000, 10), thinker('thinker#1', 0, 3500, 1)]);
    expect(chooseRoute(apart, { promptTokens: 30, items: [] })!.thinker).toBe('thinker#0');
  });

  it('prefers the instance holding the EC entry, and counts its encode time as 0', () => {
    const holds: EcLookup = (item) => (item.index === 0 ? { localTo: ['thinker#1'], remote: false } : null);
    const s = snapshot(
      [thinker('thinker#0', 0, 1000), thinker('thinker#1', 0, 1000)],
      [audioEncoder('audio-encoder#a', 0, 0.001)],
      holds,
    );
    const choice = chooseRoute(s, { promptTokens: 800, items: [clip] })!;
    expect(choice.thinker).toBe('thinker#1');
    expect(choice.reason).toBe('ec_local');
    expect(choice.ecHits).toEqual([0]);
    // No encode (a hit), no fetch (local): the prefill alone.
    expect(choice.predictedTtftSeconds).toBeCloseTo(0.8, 6);
    // On a miss the clip's 750 rows cost 0.75 s on the encoder first.
    const missed = chooseRoute({ ...s, ecLookup: miss }, { promptTokens: 800, items: [clip] })!;
    expect(missed.ecHits).toEqual([]);
    expect(missed.predictedTtftSeconds).toBeCloseTo(0.75 + 0.8, 6);
  });

  it('an EC entry held elsewhere does not outweigh a much longer queue', () => {
    const holds: EcLookup = () => ({ localTo: ['thinker#0'], remote: true });
    const s = snapshot([thinker('thinker#0', 10_000, 1000), thinker('thinker#1', 0, 1000)], [], holds);
    expect(chooseRoute(s, { promptTokens: 800, items: [clip] })!.thinker).toBe('thinker#1');
  });

  it('rows in Redis cost a fetch; rows only in another Thinker process are a miss for this one', () => {
    const s = snapshot(
      [thinker('thinker#0', 0, 1000), thinker('thinker#1', 100, 1000)],
      [audioEncoder('audio-encoder#a', 0, 0.001)],
      () => ({ localTo: ['thinker#1'], remote: true }),
    );
    // thinker#0 fetches the 750 rows (far cheaper than encoding them) and has the shorter queue.
    const remote = chooseRoute(s, { promptTokens: 800, items: [clip] })!;
    expect(remote.thinker).toBe('thinker#0');
    expect(remote.ecHits).toEqual([0]);
    expect(remote.predictedTtftSeconds).toBeCloseTo(750 * ROUTE_DEFAULTS.fetchSecondsPerRow + 0.8, 6);
    // Without Redis only thinker#1 can use them: 0.1 s of queue beats 0.75 s of encoding on thinker#0.
    const onlyThere = chooseRoute(
      { ...s, ecLookup: () => ({ localTo: ['thinker#1'], remote: false }) },
      {
        promptTokens: 800,
        items: [clip],
      },
    )!;
    expect(onlyThere.thinker).toBe('thinker#1');
    expect(onlyThere.reason).toBe('ec_local');
    expect(onlyThere.predictedTtftSeconds).toBeCloseTo(0.1 + 0.8, 6);
  });

  it('sends the items to the encoder instance that finishes them first', () => {
    const s = snapshot(
      [thinker('thinker#0', 0, 1000)],
      [audioEncoder('audio-encoder#a', 5000, 0.0002), audioEncoder('audio-encoder#b', 0, 0.0002)],
    );
    const choice = chooseRoute(s, { promptTokens: 800, items: [clip] })!;
    expect(choice.encoders.get('audio-encoder')).toBe('audio-encoder#b');
    expect(choice.predictedTtftSeconds).toBeCloseTo(750 * 0.0002 + 0.8, 6);
  });

  it('overlaps the queue wait with encoding: the later of the two, then the prefill', () => {
    const s = snapshot([thinker('thinker#0', 2000, 1000)], [audioEncoder('audio-encoder#a', 0, 0.001)]);
    // queue 2 s, encode 0.75 s -> ready at 2 s, + 0.8 s prefill.
    expect(chooseRoute(s, { promptTokens: 800, items: [clip] })!.predictedTtftSeconds).toBeCloseTo(2.8, 6);
  });

  it('falls back sensibly with no measurements: defaults, shortest queue, then fewest in flight', () => {
    const idle = snapshot([thinker('thinker#0', 0, null, 3), thinker('thinker#1', 0, null, 1)]);
    const first = chooseRoute(idle, { promptTokens: 40, items: [] })!;
    expect(first.thinker).toBe('thinker#1');
    expect(first.reason).toBe('unmeasured');
    expect(first.predictedTtftSeconds).toBeCloseTo(40 / ROUTE_DEFAULTS.prefillTokensPerSecond, 9);
    const queued = snapshot([thinker('thinker#0', 0, null), thinker('thinker#1', 500, null)]);
    expect(chooseRoute(queued, { promptTokens: 40, items: [] })!.thinker).toBe('thinker#0');
    // An unmeasured instance is assumed as fast as its measured peers, not as the default.
    const half = snapshot([thinker('thinker#0', 900, 100), thinker('thinker#1', 1000, null)]);
    expect(chooseRoute(half, { promptTokens: 10, items: [] })!.thinker).toBe('thinker#0');
  });

  it('has nothing to choose without a Thinker instance', () => {
    expect(chooseRoute(snapshot([]), { promptTokens: 1, items: [] })).toBeNull();
  });
});

describe('chooseRoute with prefix caches (ttft charges the positions an instance does not hold)', () => {
  it('sends a turn where its KV is', () => {
    const holder = { ...thinker('thinker#0', 400, 20_000, 3), cachedPositions: 2672 };
    const s = snapshot([holder, thinker('thinker#1', 0, 20_000, 0)]);
    const choice = chooseRoute(s, { promptTokens: 2738, items: [] })!;
    expect(choice.thinker).toBe('thinker#0');
    expect(choice.reason).toBe('kv_overlap');
    expect(choice.cachedPositions).toBe(2672);
    expect(choice.predictedTtftSeconds).toBeCloseTo((400 + 2738 - 2672) / 20_000, 6);
  });

  it('recomputes elsewhere when queueing at the holder costs more than the prompt', () => {
    const holder = { ...thinker('thinker#0', 60_000, 20_000, 9), cachedPositions: 2672 };
    const s = snapshot([holder, thinker('thinker#1', 0, 20_000)]);
    const choice = chooseRoute(s, { promptTokens: 2738, items: [] })!;
    expect(choice.thinker).toBe('thinker#1');
    expect(choice.cachedPositions).toBe(0);
  });
});

describe('chooseRoute: a video priced on the encoder instance and Thinker pair that answers first', () => {
  const vision = (
    instance: string,
    rates: { image?: number; video?: number },
    overall: number | null,
    host?: string,
  ): EncoderLoad => ({
    instance,
    stageId: 'image-encoder',
    modality: 'image',
    queuedRows: 0,
    secondsPerRow: overall,
    secondsPerRowOf: rates,
    inFlight: 0,
    ...(host !== undefined ? { host } : {}),
  });
  // 30 frames of 224 x 168: 15 temporal patches of 8 x 6 rows.
  const video = { index: 0, modality: 'video' as const, numEmbeddings: 720, stageId: 'image-encoder' };
  const image = { index: 0, modality: 'image' as const, numEmbeddings: 48, stageId: 'image-encoder' };

  it('avoids the encoder instance measured slower at video, and prices the clip at its video rate', () => {
    const s = snapshot(
      [thinker('thinker#0', 0, 4000)],
      [vision('image-encoder#slow', { video: 0.002 }, 0.002), vision('image-encoder#fast', { video: 0.0005 }, 0.0005)],
    );
    const choice = chooseRoute(s, { promptTokens: 800, items: [video] })!;
    expect(choice.encoders.get('image-encoder')).toBe('image-encoder#fast');
    expect(choice.predictedTtftSeconds).toBeCloseTo(720 * 0.0005 + 800 / 4000, 6);
  });

  it('uses the per-modality rate: faster at images is not faster at video', () => {
    const s = snapshot(
      [thinker('thinker#0', 0, 4000)],
      [
        vision('image-encoder#a', { image: 0.0002, video: 0.003 }, 0.001),
        vision('image-encoder#b', { image: 0.0006, video: 0.0006 }, 0.0006),
      ],
    );
    expect(chooseRoute(s, { promptTokens: 100, items: [video] })!.encoders.get('image-encoder')).toBe(
      'image-encoder#b',
    );
    expect(chooseRoute(s, { promptTokens: 100, items: [image] })!.encoders.get('image-encoder')).toBe(
      'image-encoder#a',
    );
  });

  it('prices an instance with no video measured at its peers’ video rate, else its own overall rate', () => {
    const peers = snapshot(
      [thinker('thinker#0', 0, 4000)],
      [vision('image-encoder#new', {}, 0.0001), vision('image-encoder#seen', { video: 0.001 }, 0.001)],
    );
    const choice = chooseRoute(peers, { promptTokens: 0, items: [video] })!;
    // Both at the measured 0.001 s a video row: a tie, so the estimate is the peers' rate, not #new's 0.0001.
    expect(choice.predictedTtftSeconds).toBeCloseTo(720 * 0.001, 6);
    const alone = snapshot([thinker('thinker#0', 0, 4000)], [vision('image-encoder#new', {}, 0.0001)]);
    expect(chooseRoute(alone, { promptTokens: 0, items: [video] })!.predictedTtftSeconds).toBeCloseTo(0.072, 6);
  });

  it('adds the rows’ transfer when the encoder is on another host than the Thinker', () => {
    const transfer = ROUTE_DEFAULTS.transferSecondsPerRow * 720;
    const near = vision('image-encoder#a', { video: 0.0005 }, 0.0005, 'host-a');
    // Faster, but by less than the transfer: the encoder beside the Thinker answers first.
    const farLittleFaster = vision(
      'image-encoder#b',
      { video: 0.0005 - ROUTE_DEFAULTS.transferSecondsPerRow / 2 },
      null,
      'host-b',
    );
    const t = { ...thinker('thinker#0', 0, 4000), host: 'host-a' };
    const s = snapshot([t], [near, farLittleFaster]);
    const choice = chooseRoute(s, { promptTokens: 0, items: [video] })!;
    expect(choice.encoders.get('image-encoder')).toBe('image-encoder#a');
    expect(choice.predictedTtftSeconds).toBeCloseTo(720 * 0.0005, 6);
    // Much faster: worth the transfer, which its estimate includes.
    const farMuchFaster = vision('image-encoder#b', { video: 0.0001 }, null, 'host-b');
    const far = chooseRoute(snapshot([t], [near, farMuchFaster]), { promptTokens: 0, items: [video] })!;
    expect(far.encoders.get('image-encoder')).toBe('image-encoder#b');
    expect(far.predictedTtftSeconds).toBeCloseTo(720 * 0.0001 + transfer, 6);
  });

  it('picks the Thinker and encoder pair: a video goes to the Thinker beside the fast encoder', () => {
    // Two hosts, one Thinker and one encoder each; host b's encoder is fast, host a's slow. A Thinker on a with b's
    // encoder pays the transfer; the Thinker on b with b's encoder does not.
    const s = snapshot(
      [
        { ...thinker('thinker#a', 0, 4000), host: 'host-a' },
        { ...thinker('thinker#b', 0, 4000), host: 'host-b' },
      ],
      [
        vision('image-encoder#a', { video: 0.002 }, null, 'host-a'),
        vision('image-encoder#b', { video: 0.0005 }, null, 'host-b'),
      ],
    );
    const choice = chooseRoute(s, { promptTokens: 100, items: [video] })!;
    expect(choice.thinker).toBe('thinker#b');
    expect(choice.encoders.get('image-encoder')).toBe('image-encoder#b');
    expect(choice.predictedTtftSeconds).toBeCloseTo(720 * 0.0005 + 100 / 4000, 6);
  });
});
