/**
 * One shared-memory ring hop alone (issue 46): a producer process writes one frame every 3-8 ms to a consumer that
 * sleeps in its event loop between frames, as a stage waits for its next chunk; each frame carries its write time on
 * the monotonic clock both processes share, and the consumer notes when its JS has the frame. Per frame size and
 * producer mode it prints the write's cost in the producer and the hop (write -> the consumer's JS has it):
 * `idle`, the producer sleeps after the write (as a stage whose step ends with its put); `busy`, it computes on for
 * 4 ms (as a Thinker whose step goes on after the put), which shows where the doorbell's wake-up puts the consumer:
 * on the producer's core, the write itself takes the consumer's run. Modes and sizes alternate frame by frame.
 *
 *   node --import tsx bench/ttfp/ringHop.ts [--frames 120] [--ring-bytes 67108864]
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loaderFlagsFor, ShmRing } from '../../src/index.ts';
import { scriptFlags } from '../scriptFlags.ts';
import { mean, percentile } from './metrics.ts';

const SIZES = [4 << 10, 240 << 10]; // a codec or text chunk; the Thinker's first rows to the Talker (~240 KB)
const MODES = ['idle', 'busy'] as const;
const BUSY_MS = 4;
const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

async function consume(ringName: string): Promise<void> {
  const ring = ShmRing.attach(ringName);
  const hops: number[] = [];
  process.send!('ready');
  for (;;) {
    const frame = await ring.read(Date.now() + 60_000);
    const gotAtMs = monotonicMs();
    if (frame === null) break;
    const writtenAtMs = new DataView(frame.buffer, frame.byteOffset, 8).getFloat64(0, true);
    if (writtenAtMs < 0) break; // the end
    hops.push(gotAtMs - writtenAtMs);
  }
  ring.close();
  process.send!(hops, () => process.exit(0));
}

function row(label: string, writes: number[], hops: number[]): string {
  const ms = (x: number) => x.toFixed(3);
  const write = `${ms(percentile(writes, 50))} / ${ms(mean(writes))}`;
  return `| ${label} | ${write} | ${ms(percentile(hops, 50))} / ${ms(percentile(hops, 90))} / ${ms(mean(hops))} |`;
}

async function produce(): Promise<void> {
  // A ring larger than the run's frames (~57 MiB at 120): every frame lands on ring pages not written before, as the
  // first 16 MiB of each edge's traffic does in a fresh deployment (a bench run's c=1 requests).
  const flags = scriptFlags({ frames: 120, 'ring-bytes': 64 << 20 });
  // Made and closed, then attached, as main makes the rings and every process's connector attaches its own.
  const owner = ShmRing.create({ capacityBytes: flags['ring-bytes'] });
  owner.close();
  const ring = ShmRing.attach(owner.name);
  const entry = fileURLToPath(import.meta.url);
  const child = fork(entry, ['--consume', ring.name], { execArgv: loaderFlagsFor(entry) });
  await new Promise((resolve) => child.once('message', resolve));
  const hopsOf = new Promise<number[]>((resolve) => child.once('message', (m) => resolve(m as number[])));
  const plan = Array.from({ length: flags.frames * SIZES.length * MODES.length }, (_, i) => ({
    size: SIZES[i % SIZES.length],
    mode: MODES[Math.floor(i / SIZES.length) % MODES.length],
  }));
  const frames = new Map(SIZES.map((size) => [size, new Float64Array(size / 8)]));
  const writes: number[] = [];
  for (const { size, mode } of plan) {
    await new Promise((resolve) => setTimeout(resolve, 3 + Math.random() * 5));
    const frame = frames.get(size)!;
    const t0 = monotonicMs();
    frame[0] = t0;
    ring.tryWrite(new Uint8Array(frame.buffer));
    writes.push(monotonicMs() - t0);
    if (mode === 'busy') while (monotonicMs() - t0 < BUSY_MS); // the producer's step goes on
  }
  ring.tryWrite(new Uint8Array(new Float64Array([-1]).buffer));
  const hops = await hopsOf;
  ring.close();
  ring.unlink();
  console.log(
    '| frame, producer after the write | write ms p50 / mean | hop ms p50 / p90 / mean |\n| --- | --- | --- |',
  );
  for (const mode of MODES)
    for (const size of SIZES) {
      const mine = plan.map((p, i) => (p.size === size && p.mode === mode ? i : -1)).filter((i) => i >= 0);
      console.log(
        row(
          `${size >> 10} KiB, ${mode}`,
          mine.map((i) => writes[i]),
          mine.map((i) => hops[i]),
        ),
      );
    }
}

if (process.argv[2] === '--consume') await consume(process.argv[3]);
else await produce();
