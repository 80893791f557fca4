/**
 * Every message that crosses the main <-> stage process boundary (the child_process IPC channel). Control only:
 * tensors travel through the connector as frames; these messages stay small.
 */
import type { SamplingParams, StageGraph } from '../config/types.ts';
import type { SerializedError } from '../errors.ts';
import type { FinishReason } from '../engine/types.ts';

/** How a stage process finds its peers: every edge ring it reads or writes. */
export interface EdgeBinding {
  readonly from: string; // instance id, e.g. "thinker#0" or "main"
  readonly to: string;
  readonly connector: string; // connector name in the graph
  readonly ringName?: string; // shm only
}

/** What a stage process needs to boot: sent as its first IPC message. */
export interface StageBootArgs {
  readonly graph: StageGraph;
  readonly stageIndex: number;
  readonly replica: number;
  readonly edges: readonly EdgeBinding[];
}

export interface DownstreamTarget {
  readonly instance: string; // "talker#0" or "main"
  readonly stageId: string; // "talker" or "main"
}

export interface AddRequest {
  readonly type: 'add';
  readonly requestId: string;
  /** Thinker only: the prompt as token ids. */
  readonly promptTokenIds?: readonly number[];
  readonly sampling: SamplingParams;
  /** Where this request's chunks go: next stages it needs ([] when none) and, for final-output stages, main. */
  readonly downstream: readonly DownstreamTarget[];
  /** The upstream instance to receive from (absent for the entry stage). */
  readonly upstream?: { readonly instance: string; readonly stageId: string };
  /** Per-request override of the initial codec chunk (Talker). */
  readonly initialCodecChunkFrames?: number;
  /** Absolute deadline for the first input chunk (downstream stages). */
  readonly firstChunkDeadline: number;
}

export type MainToStage =
  /** The first message a stage process receives. */
  | ({ readonly type: 'boot' } & StageBootArgs)
  | AddRequest
  | { readonly type: 'abort'; readonly requestId: string; readonly reason: string }
  | { readonly type: 'pause'; readonly requestId: string }
  | { readonly type: 'resume'; readonly requestId: string }
  /** Finish in-flight work (up to drainMs), then exit 0. */
  | { readonly type: 'shutdown'; readonly drainMs: number }
  /** Load report from downstream (Code2Wav queue depth), for the dynamic initial chunk. */
  | { readonly type: 'load'; readonly stageId: string; readonly queueDepth: number };

export interface StageReadySettings {
  readonly stageId: string;
  readonly replica: number;
  readonly pid: number;
  readonly threads: number;
  readonly modelFiles: readonly string[];
  readonly loadMs: number;
}

export interface EdgeSample {
  readonly from: string; // producing stage id
  readonly to: string; // consuming stage id, or "main"
  readonly latencyMs: number; // saved by the producer -> received by the consumer (same wall clock, one machine)
  readonly bytes: number;
}

export interface StageStats {
  readonly queueDepth: number; // requests waiting (not yet running)
  readonly running: number;
  readonly batchSize: number; // of the last step
  readonly stepMs: number;
  /** Since the previous report (bounded): batch size of every step, and received chunks. */
  readonly batchSizes: readonly number[];
  readonly edgeSamples: readonly EdgeSample[];
}

export type StageToMain =
  | { readonly type: 'ready'; readonly settings: StageReadySettings }
  | { readonly type: 'boot_failed'; readonly error: SerializedError }
  /** The request is done in this stage (its last chunk, flagged final, has been put). */
  | { readonly type: 'finished'; readonly requestId: string; readonly finishReason: FinishReason; readonly numTokens: number; readonly error?: SerializedError }
  | { readonly type: 'stats'; readonly stats: StageStats }
  | { readonly type: 'drained' };

/** Hard limit on one IPC message, checked on both ends (a bug must not turn into a multi-MB JSON message). */
export const MAX_CONTROL_MESSAGE_BYTES = 1 << 20; // 1 MiB
