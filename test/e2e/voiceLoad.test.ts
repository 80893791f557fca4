/**
 * 16 voice sessions at once on the default pipeline: each streams espeak-ng speech at real-time pace with server
 * VAD and gets its turn answered, while the server's event loop (this process hosts it; the clients run in a
 * process of their own, test/helpers/voiceClients.ts) stays responsive.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfigPath } from '../../src/config/loadConfig.ts';
import { killOnFinish } from '../helpers/processes.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const CLIENTS = join(import.meta.dirname, '..', 'helpers', 'voiceClients.ts');

const SESSIONS = 16;
let served: ServedPipeline | undefined;

beforeAll(async () => {
  served = await servePipeline(defaultConfigPath());
}, 120_000);

afterAll(async () => {
  await served?.close();
});

describe('voice sessions under load', () => {
  it(`${SESSIONS} concurrent sessions: every turn answered, the event loop never stalls`, async () => {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    const clients = fork(CLIENTS, [served!.wsUrl, String(SESSIONS), '37'], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    killOnFinish(clients);
    let out = '';
    clients.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    // Measured while the clients talk: from their first connection to their last answer (not while their process
    // starts up and synthesizes its speech, which only competes with this thread for the CPU).
    clients.once('message', () => delay.enable());
    const code = await new Promise<number | null>((resolve) => clients.once('exit', resolve));
    delay.disable();
    expect(code).toBe(0);
    const seen = JSON.parse(out) as string[][];
    expect(seen).toHaveLength(SESSIONS);
    for (const types of seen) {
      const at = ['input_audio_buffer.speech_started', 'input_audio_buffer.speech_stopped', 'response.done'].map((t) =>
        types.indexOf(t),
      );
      expect(at.every((i) => i >= 0)).toBe(true);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    }
    const [p99Ms, maxMs] = [delay.percentile(99) / 1e6, delay.max / 1e6];
    console.log(
      `event-loop delay with ${SESSIONS} voice sessions: p99 ${p99Ms.toFixed(1)} ms, max ${maxMs.toFixed(1)} ms`,
    );
    // A stall is the loop blocked for a second: every session's audio would back up behind it. How responsive it is
    // (p99 <= 20 ms, 8-21 ms measured here alone) is a speed goal, measured by the bench (bench/README.md, "event
    // loop p99 with 16 voice sessions"): it follows the CPU this thread gets, so it is printed here, not asserted.
    expect(maxMs).toBeLessThan(1000);
  }, 120_000);
});
