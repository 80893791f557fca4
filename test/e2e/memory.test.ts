/**
 * Bounded memory per response: a long spoken answer (2400 codec frames, ~3 min of audio, ~18 MB of float PCM)
 * streams through main without main keeping it. Memory is sampled as the answer plays out; its growth after the first
 * quarter (live buffers, measured after a garbage collection) stays far below what keeping the audio would cost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { configWith } from '../helpers/engine.ts';

let engine: Orchestrator;
beforeAll(async () => {
  engine = await Orchestrator.start(configWith('tiny-omni-text-in.yaml'));
}, 120_000);
afterAll(async () => {
  await engine?.close();
});

describe('a long answer', () => {
  it("keeps main's memory flat: delivered audio is let go", async () => {
    const handle = engine.generate({
      messages: [{ role: 'user', content: 'Tell me a very long story about the sea.' }],
      modalities: ['text', 'audio'],
      sampling: { maxTokens: 1200, ignoreEos: true },
      talkerSampling: { ignoreEos: true },
    });
    const MiB = 2 ** 20;
    const gc = (globalThis as { gc?: () => void }).gc!; // vitest runs the workers with --expose-gc
    /** Buffer memory still reachable: garbage is collected first, so only what someone keeps counts. */
    const liveBuffers = () => {
      gc();
      return process.memoryUsage().arrayBuffers;
    };
    let pcmBytes = 0;
    const live: number[] = [];
    await new Promise<void>((resolve, reject) =>
      handle.events.subscribe({
        next: (e) => {
          if (e.type !== 'audio') return;
          pcmBytes += e.pcm.byteLength; // counted, not kept
          if (e.seq % 10 === 0) live.push(liveBuffers());
        },
        complete: resolve,
        error: reject,
      }),
    );
    expect(pcmBytes).toBeGreaterThan(15 * MiB);
    const quarter = live[Math.floor(live.length / 4)];
    const growth = Math.max(...live.slice(Math.floor(live.length / 4))) - quarter;
    // Keeping the audio would add ~3/4 of pcmBytes after the first quarter; letting it go adds next to nothing.
    expect(growth / MiB).toBeLessThan((0.75 * pcmBytes) / MiB / 2);
  }, 300_000); // ~50 s on an idle 2-core machine; a bound for hangs only
});
