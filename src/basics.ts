/**
 * The light half of Chorus's public entry: what costs nothing to import (no model, native addon, server or Redis
 * client is loaded): error codes, the config's types and constants, a process tree's CPU time, the diagnostics
 * channels' names, the WAV and resampling helpers, the seeded PRNG, the words prompts are made of. `chorus`
 * (src/index.ts) re-exports all of it; `chorus/basics` is the same names alone, for a tool that must start fast (a
 * report, a test).
 * bench/ imports the package through these two files only (test/helpers/importGraph.ts).
 */

// Errors (stable CHORUS_ERR_* codes), the logger, the config's shapes and constants, where models are cached.
export type { RoutingPolicy, SchedulingPolicy, StageGraph, StageSpec } from './common/graph.ts';
export { GREEDY_SAMPLING, type SamplingParams } from './common/samplingParams.ts';
export { ChorusError, ErrorCodes } from './common/errors.ts';
export { logger, type Logger } from './common/log.ts';
export { defaultConfigPath, repoRoot, userCacheDir } from './config/paths.ts';

// The command line: what a bad flag does (exit 2 with the usage), as every `chorus` command reports it.
export { intFlag, UsageError } from './common/cliArgs.ts';

// Observing a deployment: diagnostics channels' names, trace context, a process tree's CPU, a step trace's record,
// the first-packet account's marks (on the monotonic clock), an encoder stage's stats in its READY, how long the VAD
// keeps listening after speech, a Redis URL without secrets.
export { channelNames } from './common/diagnostics.ts';
export { contextFromTraceparent } from './tracing/traceContext.ts';
export { CLOCK_TICKS_PER_SECOND, cpuMsOf, cpuTicksOf, threadsCpuMsOf } from './common/processCpu.ts';
export { STEP_TRACE_ENV, type MarkRecord, type StepRecord } from './worker/StepTrace.ts';
export { monotonicMs, PACKET_MARK_CHANNEL, PERF_TO_MONOTONIC_MS, type PacketMark } from './common/packetMarks.ts';
export { encoderStatsOf } from '../stages/encoder/protocol.ts';
export { COMMIT_TAIL_MS } from './voice/TurnDetector.ts';
export { redactUrl } from '../transport/redis/redisLink.ts';

// Text, audio and numbers: common words, WAV decoding, resampling, concatenation, the seeded PRNG the samplers use,
// the first audio chunk's size the scheduler picks.
export { COMMON_WORDS } from './tokenizer/words.ts';
export { decodeWav } from './media/wav.ts';
export { resample } from './media/resample.ts';
export { concatArrays, concatFloat32 } from './common/arrays.ts';
export { Prng } from '../stages/sampling/Prng.ts';
export { initialChunkFrames } from './sched/chunkPolicy.ts';
