/**
 * The video decoder spawner (src/media/video/DecoderSpawner.ts): decoders start without main forking, so main's event
 * loop keeps turning while they start however large main has grown; and nothing is left behind: no decoder once its
 * decode has ended or been killed (a limit passed, or its request gone), no fd in main or in the spawner, no spawner or
 * decoder once main has died.
 */
import { spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { DecoderSpawner } from '../../src/media/video/DecoderSpawner.ts';
import { decodeVideo, type VideoLimits } from '../../src/media/video/decodeVideo.ts';
import { DEFAULT_VIDEO_GRID } from '../../src/media/video/videoGrid.ts';
import { makeVideo } from '../helpers/videos.ts';

/** Below this test's own thread: the decoders' CPU must not be what delays its event loop. */
const limits: VideoLimits = { maxSeconds: 60, maxInputBytes: 8e6, maxFrameBytes: 64e6, timeoutMs: 20_000, nice: 19 };

/** The children of `pid` now (every thread's). */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
}

/** Whether `pid` runs (a zombie, killed and not yet reaped by whoever inherited it, does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

/** This process's main thread's system CPU ms so far (stime, /proc/self/task/<pid>/stat field 15). */
function mainThreadSystemMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]) * 10; // 100 ticks a second
}

describe('DecoderSpawner', () => {
  let mp4: Buffer;
  beforeAll(async () => {
    DecoderSpawner.shared(); // started while this process is small, as the server starts it
    mp4 = await makeVideo({ seconds: 4, width: 320, height: 240, audio: true });
  });

  it("keeps main's event loop turning while 4 decoders start, main at 1.5 GB resident", async () => {
    // The same decodes while main is small, then with main at 1.5 GB: what main's size adds is what the test bounds.
    // Each run's system CPU on this thread rises with the machine's load (20-30 ms quiet, 120 once beside three busy
    // loops and the unit tier), so a bound on the with-ballast run alone failed under load; a fork from a large main
    // adds the copy of its page tables on top of whatever the load adds (230-260 ms of system CPU and 325-408 ms of
    // loop stopped for these 4 decodes when main spawned ffmpeg itself).
    const small = await fourDecodes();
    // Filled, so resident: a fork from here would copy page tables for all of it.
    const ballast = Array.from({ length: 24 }, () => Buffer.alloc(64 << 20, 1));
    expect(process.memoryUsage().rss).toBeGreaterThan(1.5e9);
    const large = await fourDecodes();
    ballast.length = 0;
    const [cpu, loop] = [
      [small.systemMs, large.systemMs],
      [small.maxDelayMs, large.maxDelayMs],
    ];
    const what = `system CPU ${cpu.join(' -> ')} ms, loop delay max ${loop.join(' -> ')} ms`;
    expect(large.systemMs - small.systemMs, what).toBeLessThan(100);
    expect(large.maxDelayMs - small.maxDelayMs, what).toBeLessThan(150);
  });

  /** 4 decodes at once: this thread's system CPU over them and its event loop's longest stop (ms). */
  async function fourDecodes(): Promise<{ systemMs: number; maxDelayMs: number }> {
    const delay = monitorEventLoopDelay({ resolution: 1 });
    const systemBefore = mainThreadSystemMs();
    delay.enable();
    const sampling = { fps: 2, maxFrames: 8, withAudio: true } as const;
    const decodes = await Promise.all(
      [1, 2, 3, 4].map(() => decodeVideo({ kind: 'file', bytes: mp4 }, sampling, DEFAULT_VIDEO_GRID, limits, 'clip')),
    );
    delay.disable();
    // 8 frames and the 4 s track (16 kHz pcm16: 128 kB, a little more with the AAC encoder's priming) each
    for (const d of decodes) expect([d.numFrames, Math.round(d.audio!.byteLength / 32_000)]).toEqual([8, 4]);
    return { systemMs: mainThreadSystemMs() - systemBefore, maxDelayMs: Math.round(delay.max / 1e4) / 100 };
  }

  it('leaves no decoder and no fd behind: decodes that end, are refused mid-way, time out or fail', async () => {
    const spawner = DecoderSpawner.shared();
    const fds = (pid: number | 'self') => readdirSync(`/proc/${pid}/fd`).length;
    await decodeVideo({ kind: 'file', bytes: mp4 }, { fps: 2, maxFrames: 8 }, DEFAULT_VIDEO_GRID, limits, 'warm');
    const [mainFds, spawnerFds] = [fds('self'), fds(spawner.pid!)];
    const decode = (l: Partial<VideoLimits>, bytes: Uint8Array = mp4) =>
      decodeVideo({ kind: 'file', bytes }, { fps: 2, maxFrames: 8 }, DEFAULT_VIDEO_GRID, { ...limits, ...l }, 'c').then(
        (v) => v.numFrames,
        (err: { code: string }) => err.code,
      );
    const outcomes = await Promise.all([
      decode({}),
      decode({ maxSeconds: 1 }), // killed at its third frame
      decode({ timeoutMs: 1 }),
      decode({}, new TextEncoder().encode('not a video')),
    ]);
    expect(outcomes).toEqual([8, ErrorCodes.VIDEO_TOO_LONG, ErrorCodes.VIDEO_DECODE_TIMEOUT, ErrorCodes.VIDEO_INVALID]);
    // A decode settles only once its child has exited (the spawner's report) and its sockets have closed.
    expect(childrenOf(spawner.pid!)).toEqual([]);
    expect([fds('self'), fds(spawner.pid!)]).toEqual([mainFds, spawnerFds]);
  });

  it('kills the decoder of a cancelled decode (its request gone): it ends once the decoder has exited', async () => {
    const spawner = DecoderSpawner.shared();
    const stopped = new AbortController();
    const exits: { pid: number | null; signal: string | null }[] = [];
    let decoderPid = 0;
    const onDecoder = (m: unknown): void => {
      const e = m as { event: 'spawned' | 'exit'; pid: number | null; signal?: string | null };
      if (e.event === 'exit') return void exits.push({ pid: e.pid, signal: e.signal ?? null });
      // Frozen as it starts, so it is surely mid-decode (it could never finish) when its request goes.
      decoderPid = e.pid!;
      process.kill(decoderPid, 'SIGSTOP');
      stopped.abort();
    };
    subscribe(channelNames.videoDecoder, onDecoder);
    onTestFinished(() => void unsubscribe(channelNames.videoDecoder, onDecoder));
    const sampling = { fps: 2, maxFrames: 8 };
    const slow = { ...limits, timeoutMs: 120_000 }; // not what ends it: the test's own timeout comes first
    const decode = (cancel: AbortSignal) =>
      decodeVideo({ kind: 'file', bytes: mp4 }, sampling, DEFAULT_VIDEO_GRID, slow, 'clip', cancel).then(
        () => 'decoded',
        (err: { code: string }) => err.code,
      );
    expect(await decode(stopped.signal)).toBe(ErrorCodes.REQUEST_CANCELLED);
    // It settled once the decoder had exited, killed: nothing of it runs.
    expect(exits).toEqual([{ pid: decoderPid, signal: 'SIGKILL' }]);
    expect([running(decoderPid), childrenOf(spawner.pid!)]).toEqual([false, []]);
    // A request already gone starts no decoder at all.
    expect(await decode(stopped.signal)).toBe(ErrorCodes.REQUEST_CANCELLED);
    expect(exits).toHaveLength(1);
  });

  it('dies with main, killing the decoders it started', async () => {
    // A main that starts a decoder (a shell that says it is up, then sleeps), reports its spawner's pid, and waits.
    const url = new URL('../../src/media/video/DecoderSpawner.ts', import.meta.url).href;
    const script = `import(${JSON.stringify(url)}).then(async ({ DecoderSpawner }) => {
      const spawner = DecoderSpawner.shared();
      const child = await spawner.spawn('/bin/sh', ['-c', 'echo up; exec sleep 60'], 2, null);
      child.outputs[0].once('data', () => console.log(spawner.pid));
      await child.closed;
    })`;
    const main = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onTestFinished(() => void main.kill('SIGKILL')); // a failed look must not leave it waiting
    const spawnerPid = Number(
      await Promise.race([
        once(main.stdout!, 'data').then(([d]) => `${d}`),
        once(main, 'exit').then(([code]) => Promise.reject(new Error(`main exited first (${code})`))),
      ]),
    );
    const decoders = childrenOf(spawnerPid);
    expect(decoders).toHaveLength(1);
    const decoderPid = decoders[0];
    main.kill('SIGKILL');
    await once(main, 'exit');
    // Not this process's children (nothing to wait on): looked at until gone, 10 s at most.
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20)))
      if (!running(spawnerPid) && !running(decoderPid)) break;
    expect([running(spawnerPid), running(decoderPid)]).toEqual([false, false]);
  });
});
