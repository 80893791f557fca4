/** VadService.start(): a model that does not load rejects start-up with CHORUS_ERR_MODEL_LOAD, naming why. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ErrorCodes, isChorusError } from '../../src/common/errors.ts';
import { VadService } from '../../src/voice/VadService.ts';
import { tempDir } from '../helpers/tempDir.ts';

async function startError(modelPath: string): Promise<unknown> {
  try {
    await (await VadService.start({ modelPath, workers: 2 })).close();
  } catch (err) {
    return err;
  }
  return null;
}

it('rejects a missing model file before starting any worker', async () => {
  const err = await startError('/nonexistent/silero_vad_v5.onnx');
  expect(isChorusError(err, ErrorCodes.MODEL_LOAD)).toBe(true);
  expect((err as Error).message).toContain('/nonexistent/silero_vad_v5.onnx');
});

it('rejects a file that is not a model, with the worker failure as cause, leaving no worker', async () => {
  const modelPath = join(tempDir('vad-start'), 'not-a-model.onnx');
  writeFileSync(modelPath, 'this is not an ONNX graph');
  const workerPorts = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;
  const portsBefore = workerPorts();
  const err = await startError(modelPath);
  expect(workerPorts()).toBe(portsBefore); // each worker thread holds a MessagePort until it has exited
  expect(isChorusError(err, ErrorCodes.MODEL_LOAD)).toBe(true);
  expect((err as Error).message).toMatch(/VAD worker \d failed to start/);
  expect(String((err as Error & { cause?: Error }).cause?.message)).toMatch(/protobuf|parse|load/i);
});
