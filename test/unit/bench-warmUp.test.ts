/**
 * A bench server whose warm-up fails is closed before the failure is reported (bench/ttfp/modeRun.ts warmedOrClosed):
 * before, its server and stage processes kept `chorus bench` alive after it had said the warm-up failed.
 */
import { describe, expect, it } from 'vitest';
import { warmedOrClosed, type LiveMode } from '../../bench/ttfp/modeRun.ts';

function fakeLive(): LiveMode & { closed: number } {
  const live = {
    mode: {} as LiveMode['mode'],
    target: {} as LiveMode['target'],
    server: null,
    closed: 0,
    close: async () => void live.closed++,
  };
  return live;
}

describe('warmedOrClosed', () => {
  it('returns the mode, open, once its warm-up passed', async () => {
    const live = fakeLive();
    await expect(warmedOrClosed(live, async () => {})).resolves.toBe(live);
    expect(live.closed).toBe(0);
  });

  it('closes the mode when its warm-up fails, and throws the warm-up error on', async () => {
    const live = fakeLive();
    const failed = new Error('the warm-up request failed (CHORUS_ERR_CHUNK_TIMEOUT); is the server healthy?');
    await expect(
      warmedOrClosed(live, async () => {
        throw failed;
      }),
    ).rejects.toBe(failed);
    expect(live.closed).toBe(1);
  });
});
