/** VadService.close(): streams closed, workers gone (the process exits by itself), idempotent. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ErrorCodes, isChorusError } from '../../src/common/errors.ts';
import { DEFAULT_TURN_PARAMS, VadService } from '../../src/voice/VadService.ts';

const workerPorts = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;

it('close() closes every stream, ends the workers, refuses new streams, and is idempotent', async () => {
  const portsBefore = workerPorts();
  const vad = await VadService.start({ workers: 2 });
  expect(workerPorts()).toBe(portsBefore + 2); // a worker thread holds a MessagePort until it has exited
  const stream = vad.open(DEFAULT_TURN_PARAMS, () => {});
  vad.open(DEFAULT_TURN_PARAMS, () => {});
  expect(vad.streams).toBe(2);
  const closing = vad.close();
  expect(vad.close()).toBe(closing);
  await closing;
  expect(vad.streams).toBe(0);
  expect(workerPorts()).toBe(portsBefore);
  stream.push(new Int16Array(480)); // a session racing its teardown: no throw, nothing happens
  stream.reset();
  stream.close();
  let refused: unknown;
  try {
    vad.open(DEFAULT_TURN_PARAMS, () => {});
  } catch (err) {
    refused = err;
  }
  expect(isChorusError(refused, ErrorCodes.SHUTTING_DOWN)).toBe(true);
});

it('close() ends the worker threads: a process that used the VAD exits on its own', async () => {
  const child = join(import.meta.dirname, 'vadServiceChild.ts');
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const proc = execFile(
      process.execPath,
      ['--import', 'tsx', child],
      { timeout: 30_000, killSignal: 'SIGKILL', env: { ...process.env, CHORUS_LOG_LEVEL: 'silent' } },
      (_err, stdout, stderr) => resolve({ code: proc.exitCode, stdout, stderr }),
    );
  });
  expect(result.stderr).toBe('');
  expect(result.stdout).toBe('closed streams=0\n');
  expect(result.code).toBe(0); // null: it had to be killed, a handle kept it alive
});
