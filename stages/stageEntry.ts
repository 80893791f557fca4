/**
 * The file a stage process runs (StageWorker forks it): the generic stage process body with the kind registry
 * as the way to build a core.
 */
import { ipcChannelToParent } from '../src/control/ipc/ipcChannel.ts';
import type { MainToStage, StageToMain } from '../src/worker/messages.ts';
import { runStageProcess } from '../src/worker/stageMain.ts';
import { createStage } from './registry.ts';

runStageProcess(ipcChannelToParent<StageToMain, MainToStage>(), createStage);
