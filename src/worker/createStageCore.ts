/**
 * Builds a stage's runner and core from its spec. The only place that maps a stage kind to its implementation.
 */
import type { StageGraph, StageSpec } from '../config/types.ts';
import { ChorusError, ErrorCodes } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import type { StageToMain } from './messages.ts';
import type { StageContext, StageCore } from './StageCore.ts';
import { ThinkerCore } from './cores/ThinkerCore.ts';
import { TalkerCore } from './cores/TalkerCore.ts';
import { Code2WavCore } from './cores/Code2WavCore.ts';
import { EncoderCore } from './cores/EncoderCore.ts';
import { createEncoderRunner, type EncoderSpec } from '../../stages/encoders/createEncoderRunner.ts';

export interface BuiltStage {
  readonly core: StageCore;
  readonly modelFiles: readonly string[];
  readonly close: () => Promise<void>;
}

/** KV bytes one position costs: keys and values, every layer, float32. Unknown (file models): measured later. */
export function kvBytesPerToken(spec: StageSpec): number {
  const m = spec.model;
  if (m.source !== 'generated' || m.kind === 'code2wav' || m.kind === 'audio_encoder' || m.kind === 'vision_encoder') return 1;
  return 2 * m.size.numLayers * m.size.hiddenSize * Float32Array.BYTES_PER_ELEMENT;
}

export async function createStageCore(
  graph: StageGraph,
  spec: StageSpec,
  adapter: ChunkTransferAdapter,
  post: (msg: StageToMain) => void,
  log: Logger,
): Promise<BuiltStage> {
  const ctx: StageContext = { spec, chunkPolicy: graph.chunkPolicy, asyncChunk: graph.asyncChunk, adapter, post, log };
  switch (spec.kind) {
    case 'thinker': {
      const runner = await createThinkerRunner(spec, graph.modelsDir);
      return { core: new ThinkerCore(ctx, runner, kvBytesPerToken(spec)), modelFiles: modelFilesOf(spec), close: () => runner.close() };
    }
    case 'talker': {
      const runner = await createTalkerRunner(spec, graph.modelsDir);
      return { core: new TalkerCore(ctx, runner, kvBytesPerToken(spec)), modelFiles: modelFilesOf(spec), close: () => runner.close() };
    }
    case 'code2wav': {
      const runner = await createCode2WavRunner(spec, graph.modelsDir);
      return { core: new Code2WavCore(ctx, runner), modelFiles: modelFilesOf(spec), close: () => runner.close() };
    }
    case 'encoder': {
      const runner = await createEncoderRunner(encoderSpecOf(spec), graph.modelsDir, { engine: spec.engine });
      const grid = runner.visionGrid;
      const want = spec.encoder?.imageGrid;
      if (grid && want && (grid.patchSize !== want.patchSize || grid.mergeSize !== want.mergeSize)) {
        await runner.close();
        throw new ChorusError(
          ErrorCodes.STAGE_BOOT,
          `stage ${spec.stageId}: the vision model cuts ${grid.patchSize} px patches merged ${grid.mergeSize}x${grid.mergeSize}, but images are counted for ${want.patchSize} px merged ${want.mergeSize}x${want.mergeSize}`,
        );
      }
      return { core: new EncoderCore(ctx, runner), modelFiles: modelFilesOf(spec), close: () => runner.close() };
    }
    default:
      throw new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${spec.stageId}: kind ${spec.kind} has no stage core yet`);
  }
}

function encoderSpecOf(spec: StageSpec): EncoderSpec {
  const m = spec.model;
  if (m.source === 'file') return { source: 'file', path: m.path, modality: spec.encoder!.modality };
  if (m.kind !== 'audio_encoder' && m.kind !== 'vision_encoder') throw new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${spec.stageId} is an encoder but its model is a ${m.kind}`);
  return m;
}

function modelFilesOf(spec: StageSpec): string[] {
  return spec.model.source === 'file' ? [spec.model.path] : [];
}
