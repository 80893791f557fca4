import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClientStallWatch, clientTooSlowError } from '../../src/server/ClientStallWatch.ts';

describe('ClientStallWatch', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('fires once a pause has lasted the timeout, counted from the first pause', () => {
    const onStall = vi.fn();
    const watch = new ClientStallWatch(20_000, onStall);
    watch.paused();
    vi.advanceTimersByTime(15_000);
    watch.paused(); // still the same pause: the clock is not restarted
    vi.advanceTimersByTime(4_999);
    expect(onStall).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(onStall).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(60_000);
    expect(onStall).toHaveBeenCalledTimes(1);
  });

  it('a resume stops the clock; the next pause starts it from zero', () => {
    const onStall = vi.fn();
    const watch = new ClientStallWatch(20_000, onStall);
    for (let i = 0; i < 5; i++) {
      watch.paused();
      vi.advanceTimersByTime(16_000); // a client at playback speed: paused ~16 s, then it has read half the buffer
      watch.resumed();
      vi.advanceTimersByTime(1_000);
    }
    expect(onStall).not.toHaveBeenCalled();
  });

  it('0 turns it off', () => {
    const onStall = vi.fn();
    new ClientStallWatch(0, onStall).paused();
    vi.advanceTimersByTime(3_600_000);
    expect(onStall).not.toHaveBeenCalled();
  });

  it('the error names the code, the buffer, the time and what to do', () => {
    const err = clientTooSlowError(20_000, 2 * 1024 * 1024);
    expect(err.code).toBe('CHORUS_ERR_CLIENT_TOO_SLOW');
    expect(err.message).toMatch(/buffer for this response \(2097152 bytes\) stayed full for 20 s/);
    expect(err.message).toMatch(/at least as fast as it plays/);
    expect(err.message).toMatch(/--client-stall-timeout/);
  });
});
