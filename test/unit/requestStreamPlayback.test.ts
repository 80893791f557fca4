/** RequestStream as main's model of the listener: TTFP targets met or missed, and the slack at each packet. */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { RequestStream } from '../../src/engine/RequestStream.ts';
import type { OutputEvent } from '../../src/common/engine.ts';
import { received, resetSeqs } from '../helpers/fakeStage.ts';

const RATE = 24_000;
const audio = (ms: number) => ({
  kind: 'audio' as const,
  pcm: new Float32Array((RATE * ms) / 1000),
  sampleRateHz: RATE,
});

function stream(targetMs: number | null): { s: RequestStream; events: OutputEvent[] } {
  const s = new RequestStream(
    'r',
    new Map(),
    [{ stageId: 'code2wav', type: 'audio' }],
    10,
    [],
    { push: () => '', flush: () => '' },
    { sampleRateHz: RATE, samplesPerFrame: 1920, framesPerToken: 2 },
    () => {},
    targetMs,
  );
  const events: OutputEvent[] = [];
  s.events.events.subscribe((e) => events.push(e));
  return { s, events };
}

const send = (s: RequestStream, ms: number, final = false) =>
  s.onChunk('code2wav', received('r', 'code2wav', 'main', audio(ms), final));

describe('RequestStream playback model', () => {
  const slack: number[] = [];
  const targets: unknown[] = [];
  const onSlack = (m: unknown) => slack.push((m as { slackMs: number }).slackMs);
  const onTarget = (m: unknown) => targets.push(m);
  beforeEach(() => {
    resetSeqs();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    slack.length = 0;
    targets.length = 0;
    subscribe(channelNames.audioSlack, onSlack);
    subscribe(channelNames.ttfpTarget, onTarget);
  });
  afterEach(() => {
    unsubscribe(channelNames.audioSlack, onSlack);
    unsubscribe(channelNames.ttfpTarget, onTarget);
    vi.useRealTimers();
  });

  it('reports a missed TTFP target in the done warnings and on the diagnostics channel', () => {
    const { s, events } = stream(50);
    vi.setSystemTime(1_000_080); // first audio 80 ms after the start
    send(s, 320, true);
    expect(targets).toEqual([{ requestId: 'r', targetMs: 50, ttfpMs: 80, met: false }]);
    const done = events.find((e) => e.type === 'done');
    expect(done).toMatchObject({ warnings: [expect.stringContaining('ttfp_target_missed')] });
  });

  it('says nothing in the answer when the target is met', () => {
    const { s, events } = stream(100);
    vi.setSystemTime(1_000_040);
    send(s, 320, true);
    expect(targets).toEqual([{ requestId: 'r', targetMs: 100, ttfpMs: 40, met: true }]);
    expect(events.find((e) => e.type === 'done')).not.toHaveProperty('warnings');
  });

  it('publishes the audio still buffered at each later packet, negative once the listener ran dry', () => {
    const { s } = stream(null);
    send(s, 320); // plays from t=0 to 320 ms
    vi.setSystemTime(1_000_200);
    send(s, 320); // 120 ms still buffered
    vi.setSystemTime(1_000_700);
    send(s, 320, true); // 640 ms sent, 700 ms elapsed: ran dry 60 ms ago
    expect(slack).toEqual([120, -60]);
    expect(targets).toEqual([]); // no target: nothing to report
  });
});
