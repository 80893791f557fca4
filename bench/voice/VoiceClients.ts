/**
 * The bench's end of the client process (clientProcess.ts): forks it, hands it one run at a time and gets the
 * run's traces back. close() is idempotent and always leaves no process behind (stop, then SIGKILL after a grace).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { ChorusError, ErrorCodes, loaderFlagsFor, moduleFile } from '../../src/index.ts';
import type { FromClients, ToClients, TurnSettings, TurnSpec, TurnTrace } from './protocol.ts';

const ENTRY = moduleFile('./clientProcess', import.meta.url).pathname;
const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;

export interface TurnRun {
  /** In turn order. */
  readonly traces: readonly TurnTrace[];
  /** From the first turn's start to the last turn's end. */
  readonly durationMs: number;
}

type RunDone = Extract<FromClients, { type: 'run_done' }>;

interface PendingRun {
  readonly runId: number;
  readonly onTurn: (ok: boolean) => void;
  readonly resolve: (done: RunDone) => void;
  readonly reject: (err: Error) => void;
}

export class VoiceClients {
  #pending: PendingRun | null = null;
  #nextRunId = 1;
  #exited = false;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (msg: FromClients) => this.#onMessage(msg));
    child.once('exit', (code, signal) => {
      this.#exited = true;
      this.#pending?.reject(
        new ChorusError(ErrorCodes.INTERNAL, `the voice bench's client process exited (code ${code}, ${signal})`),
      );
      this.#pending = null;
    });
  }

  static async start(): Promise<VoiceClients> {
    const child = fork(ENTRY, [], { execArgv: loaderFlagsFor(ENTRY), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    try {
      const [msg] = (await Promise.race([once(child, 'message'), once(child, 'exit').then(() => [null])])) as [
        FromClients | null,
      ];
      if (msg?.type !== 'ready') throw new ChorusError(ErrorCodes.INTERNAL, 'the voice client process did not start');
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return new VoiceClients(child);
  }

  /** Runs `turns` as a closed loop of `concurrency` sessions; `onTurn` hears each turn end (a progress bar). */
  run(
    concurrency: number,
    settings: TurnSettings,
    turns: readonly TurnSpec[],
    onTurn: (ok: boolean) => void = () => undefined,
  ): Promise<TurnRun> {
    return this.#send((runId) => ({ type: 'run', runId, concurrency, settings, turns }), onTurn).then((done) => ({
      traces: done.traces,
      durationMs: done.durationMs,
    }));
  }

  #send(message: (runId: number) => ToClients, onTurn: (ok: boolean) => void): Promise<RunDone> {
    if (this.#pending) throw new Error('one run at a time');
    if (this.#exited) return Promise.reject(new ChorusError(ErrorCodes.INTERNAL, 'the voice client process is gone'));
    const runId = this.#nextRunId++;
    return new Promise<RunDone>((resolve, reject) => {
      this.#pending = { runId, onTurn, resolve, reject };
      this.child.send(message(runId));
    });
  }

  #onMessage(msg: FromClients): void {
    const p = this.#pending;
    if (msg.type === 'ready' || !p || msg.runId !== p.runId) return;
    if (msg.type === 'turn') return p.onTurn(msg.ok);
    this.#pending = null;
    if (msg.type === 'run_done') p.resolve(msg);
    else p.reject(new ChorusError(ErrorCodes.INTERNAL, `the voice clients failed: ${msg.message}`));
  }

  async close(): Promise<void> {
    if (this.#exited) return;
    const exited = once(this.child, 'exit');
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies ToClients);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
