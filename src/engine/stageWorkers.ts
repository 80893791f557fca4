/**
 * How the Orchestrator starts and drives stage instances: through this interface, so tests hand it in-process
 * stand-ins and a second implementation (a stage on another machine) can plug in.
 */
import { fileURLToPath } from 'node:url';
import type { Logger } from '../common/log.ts';
import { childModuleFile, RUNS_COMPILED } from '../common/moduleFile.ts';
import type { MainToStage, StageBootArgs, StageReadySettings } from '../worker/messages.ts';
import type { StageSendOptions, StageWorkerEvents, StageWorkerOptions } from '../worker/StageWorker.ts';
import { ipcChannelToChild } from '../control/ipc/ipcChannel.ts';

/** What the Orchestrator uses of a stage supervisor (StageWorker), so tests can hand it stand-ins. */
export interface StageWorkerHandle {
  readonly pid: number | null;
  /** Its READY report (settings and model facts). */
  readonly settings: StageReadySettings | null;
  send(msg: MainToStage, opts?: StageSendOptions): void;
  /** Drain up to drainMs, then exit; resolves when it has. */
  shutdown(drainMs: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  on<E extends keyof StageWorkerEvents>(event: E, listener: (...args: StageWorkerEvents[E]) => void): unknown;
}

/** Starts one stage instance and resolves once it is READY (rejects with CHORUS_ERR_STAGE_BOOT). */
export type StartStageWorker = (args: StageBootArgs, log: Logger) => Promise<StageWorkerHandle>;

/** The package's root: src/engine/ (or dist/src/engine/ compiled) is two (three) folders below it. */
const PACKAGE_ROOT = new URL(RUNS_COMPILED ? '../../../' : '../../', import.meta.url);

/** A stage process on this machine: it runs the stage body with the kind registry, and talks over the IPC pipe. */
export const LOCAL_STAGE: StageWorkerOptions = {
  entry: fileURLToPath(childModuleFile('stages/stageEntry', PACKAGE_ROOT)),
  channelOf: ipcChannelToChild,
};
