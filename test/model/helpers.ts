/** Small model sizes and helpers for the model tests (fast to build and run). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GREEDY_SAMPLING, type SamplingParams } from '../../src/common/samplingParams.ts';
import type { Code2WavSize, GeneratedModelSpec, TalkerSize, ThinkerSize } from '../../src/common/modelSpec.ts';

export const smallThinker: ThinkerSize = {
  vocabSize: 512,
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  intermediateSize: 128,
  maxPositions: 1024,
  acceptLayer: 1,
  logitScale: 16,
};

export const smallTalker: TalkerSize = {
  codebookSize: 128,
  numCodebooks: 16,
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  intermediateSize: 128,
  maxPositions: 2048,
  framesPerToken: 2,
  conditionDim: 2 * smallThinker.hiddenSize,
  logitScale: 16,
};

export const smallCode2Wav: Code2WavSize = {
  numCodebooks: 16,
  codebookSize: 128,
  hiddenSize: 32,
  numLayers: 4,
  kernelSize: 5,
  samplesPerFrame: 1920,
  sampleRateHz: 24000,
  streamingState: true,
};

export const thinkerSpec = (seed = 7, size: ThinkerSize = smallThinker): GeneratedModelSpec => ({
  source: 'generated',
  kind: 'thinker',
  preset: 'test',
  seed,
  size,
});
export const talkerSpec = (seed = 7, size: TalkerSize = smallTalker): GeneratedModelSpec => ({
  source: 'generated',
  kind: 'talker',
  preset: 'test',
  seed,
  size,
});
export const code2wavSpec = (seed = 7, size: Code2WavSize = smallCode2Wav): GeneratedModelSpec => ({
  source: 'generated',
  kind: 'code2wav',
  preset: 'test',
  seed,
  size,
});

export function sampling(overrides: Partial<SamplingParams> = {}): SamplingParams {
  return { ...GREEDY_SAMPLING, maxTokens: 64, ...overrides };
}

/** A fresh models folder, removed by the returned cleanup. */
export function tempModelsDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-models-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Deterministic pseudo-random token ids in the byte range (what a byte tokenizer gives for text). */
export function promptIds(length: number, salt: number): number[] {
  return Array.from({ length }, (_, i) => 32 + ((i * 37 + salt * 11) % 90));
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
