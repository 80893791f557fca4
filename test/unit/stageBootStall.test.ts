/**
 * A stage's boot timeout (src/worker/StageWorker.ts start): a stage whose READY reached main's pipe before the
 * timeout is started, even when main was too busy to read it before the timeout's timer came due (timers run before
 * the poll that reads pipes); a stage that stays silent fails its boot (and is killed) at the timeout. The stage is
 * an idle child process, and its control channel a socket the test writes the READY into.
 */
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import type { ControlChannel } from '../../src/worker/ControlChannel.ts';
import type { MainToStage, StageBootArgs, StageToMain } from '../../src/worker/messages.ts';
import { StageWorker } from '../../src/worker/StageWorker.ts';
import { configWith } from '../helpers/engine.ts';
import { afterPoll, busyFor, socketPair } from '../helpers/loopStall.ts';

const BOOT_MS = 100;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

const entry = join(import.meta.dirname, '..', 'fixtures', 'idleProcess.mjs');
const boot = { graph: configWith('tiny-omni.yaml'), stageIndex: 0, replica: 0 } as unknown as StageBootArgs;
const log = pino({ level: 'silent' });

/** A control channel whose only message is a READY for each write to `socket`'s peer. */
function readyOn(socket: NodeJS.EventEmitter): ControlChannel<MainToStage, StageToMain> {
  const handlers = new Set<(msg: StageToMain) => void>();
  socket.on('data', () => handlers.forEach((h) => h({ type: 'ready', settings: {} } as StageToMain)));
  return {
    send: () => true,
    onMessage: (h) => (handlers.add(h), () => handlers.delete(h)),
    onClose: () => undefined,
    connected: true,
    close: () => undefined,
  };
}

describe('the boot timeout after a stall', () => {
  it('starts a stage whose READY waited in the pipe while the timeout came due', async () => {
    const { server, client, close } = await socketPair();
    closers.push(close);
    await afterPoll(); // from the check phase: the timers run next, then the poll
    const started = StageWorker.start(boot, log, { entry, channelOf: () => readyOn(server), bootTimeoutMs: BOOT_MS });
    client.write('ready'); // the stage's READY reached main's pipe...
    busyFor(BOOT_MS * 1.5); // ...while main stalled past the timeout: its timer runs before the pipe is read
    const worker = await started;
    closers.push(() => worker.kill());
    expect(worker.alive).toBe(true);
  });

  it('fails the boot of a stage still silent after the poll', async () => {
    const { server, close } = await socketPair();
    closers.push(close);
    const started = StageWorker.start(boot, log, { entry, channelOf: () => readyOn(server), bootTimeoutMs: BOOT_MS });
    await expect(started).rejects.toMatchObject({
      code: ErrorCodes.STAGE_BOOT,
      message: `stage audio-encoder#0 did not become ready within ${BOOT_MS} ms`,
    });
  });
});
