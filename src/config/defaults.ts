/**
 * Every default of the stage-graph YAML in one place, with units. The shipped configs in configs/ spell most
 * of these out (with comments); a minimal YAML needs only `stages`.
 */
import type { StageKind, WorkerType } from './types.ts';

export const defaults = {
  asyncChunk: true,
  /** Relative to the repo root (the folder holding package.json), not to the YAML file. */
  modelsDir: '.chorus/models',
  modelPreset: 'tiny',
  modelSeed: 0,
  /** With no `connectors:` section, one shared-memory connector named "shm" carries every edge. */
  connectorName: 'shm',
  shmRingBytes: 16 * 1024 * 1024, // 16 MiB per edge ring: a 1k-token omni prompt chunk is ~4 MiB
  redis: { url: 'redis://127.0.0.1:6379', ttlSeconds: 60, poolSize: 4, keyPrefix: 'chorus:' },
  chunkPolicy: {
    initialCodecChunkFrames: null, // null = sized from Code2Wav load (dynamic initial chunk)
    codecChunkFrames: 25, // 2 s of audio at 12.5 frames/s
    codecLeftContextFrames: 25,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 30_000, // 30 s
  },
  engine: {
    maxNumSeqs: 16,
    maxNumBatchedTokens: 2048, // tokens per step (prefill chunk + decodes)
    threads: 1, // 1 intra-op thread per stage: 2 cores are shared by 3 stages plus the server
    kvCacheBytes: 256 * 1024 * 1024, // 256 MiB: ~32k tokens of the tiny thinker (8 KiB/token)
  },
  sampling: {
    temperature: 0, // greedy
    topK: 0, // off
    topP: 1, // off
    repetitionPenalty: 1, // off
    seed: 0,
    ignoreEos: false,
  },
  replicas: 1,
  encoder: {
    cacheBytes: 64 * 1024 * 1024, // 64 MiB per encoder replica: ~85 thirty-second clips of the tiny thinker (768 KiB each)
    budgetEmbeddings: 2048, // embeddings started per step; a larger item still runs, alone (vLLM floors at the largest item)
    maxBatchSize: 8, // items per encoder run
    batchTimeoutMs: 5, // a partial batch waits this long for company
    onFailure: 'fail' as 'fail' | 'text_only',
    maxAudioSeconds: 20 * 60, // 20 min
    timeoutMs: 30_000, // 30 s from admission for an item's rows to reach the Thinker
  },
} as const;

/** code2wav and the encoders run one-shot (non-autoregressive) forwards; the Thinker and Talker generate step by step. */
export function defaultWorkerType(kind: StageKind): WorkerType {
  return kind === 'code2wav' || kind === 'encoder' ? 'generation' : 'ar';
}

/** max_tokens by kind: Thinker text tokens; Talker codec frames (4096 frames = 5.5 min of audio). */
export function defaultMaxTokens(kind: StageKind): number {
  switch (kind) {
    case 'thinker':
      return 256;
    case 'talker':
      return 4096;
    default:
      return 1; // generation stages do not sample; the field exists only to keep SamplingParams uniform
  }
}

const byteUnits: Record<string, number> = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/** 268435456 or "256MiB" -> bytes. The schema has already checked the shape. */
export function parseByteSize(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$/.exec(value);
  if (!match) throw new Error(`not a byte size: ${value}`);
  return Math.round(Number(match[1]) * byteUnits[match[2]]);
}
