/**
 * Every default of the stage-graph YAML in one place, with units. The shipped configs in configs/ spell most
 * of these out (with comments); a minimal YAML needs only `stages`.
 */

import { DEFAULT_REALTIME_RESUME } from '../common/realtimeSettings.ts';

/** chunk_policy.max_chunk_wait_ms unless set: this many chunk_timeout_ms. */
export const LIVE_WAIT_FACTOR = 10;

export const defaults = {
  asyncChunk: true,
  scheduling: 'fifo' as const, // Talker and Code2Wav: oldest first (playback: least slack first; README, Design)
  routing: 'ttft' as const, // instances by lowest estimated TTFT (queue + encode + prefill); least_loaded, round_robin
  kvPredictionMs: 1_000, // an ended request's blocks count as held on its Thinker for 1 s, until reports say so
  stageHangMs: 2_000, // 2 s of silence from a stage with work, while its process uses no CPU
  cachePartition: 'api_key' as const, // each API key its own prefix cache and encoder outputs (docs/security.md)
  realtimeResume: DEFAULT_REALTIME_RESUME, // 30 s window, 4 MiB of events to replay (docs/realtime-resume.md)
  stageNice: 8, // stage processes run 8 nice levels below the server: its event loop is short work that must not wait
  // Null: the machine's idle states as they are. The shipped configs ask for 0 (idle cores poll while requests are
  // live): a c=1 first audio ~1.2 ms sooner on this project's VMs (bench/NOTES.md, "Idle cores that poll"); a config
  // written without it does not make a machine's idle cores burn CPU unasked.
  cpuWakeupLatencyUs: null as number | null,
  /**
   * Admission on latency (docs/operations.md): the queue is bounded by a measured figure (src/server/admission/
   * measuredSlo.ts: a multiple of what requests alone take). A fixed 1.5 s first-packet default was tried (issue 41)
   * and refused the test suite's own requests on the loaded 2-core CI machine (text first token estimated at
   * 4.6-4.9 s): a default must come from what the machine measures. `slo_ttfp_ms: measured` (a spoken answer's first
   * audio bounded by the same figure) is opt-in: as a default it refused 7 of 8 requests of the assistant pipeline's
   * closed loop at c=4 on a quiet machine (estimated 2577 ms against a 2512 ms bound; the one admitted first sounded
   * in 364 ms): the estimate adds a tts step in progress to the time alone, though the newcomer's own Thinker time
   * overlaps it.
   */
  admission: { maxQueueMs: 'measured' as const, sloTtfpMs: null, runningLimit: 'adaptive' as const },

  /** Under the user's cache directory (paths.ts userCacheDir), never inside the installed package. */
  modelsDir: 'models',
  modelPreset: 'tiny',
  modelSeed: 0,
  /** With no `connectors:` section, one shared-memory connector named "shm" carries every edge. */
  connectorName: 'shm',
  chunkPolicy: {
    initialCodecChunkFrames: null, // null = sized from Code2Wav load (dynamic initial chunk)
    codecChunkFrames: 25, // 2 s of audio at 12.5 frames/s
    codecLeftContextFrames: 25,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 30_000, // 30 s
    maxChunkWaitMs: LIVE_WAIT_FACTOR * 30_000, // a producer that lives keeps a chunk wait open this long at most
    ttfpTargetMs: null, // no default TTFP target: the dynamic initial chunk decides
    firstPacketHold: true, // at light load the Thinker waits for a request's first audio (chunkPolicy.ts)
    firstAudioFirst: true, // speaking answers' steps wait while a newcomer's first audio is on its way (bounded)
    // 10 s of text ahead of its speech at most, with 12 answers speaking: the first newcomer beside sixteen long
    // answers came in 19-27 ms paced against 23-548 unpaced (bench/NOTES.md, "Paced by default"); a host that cannot
    // keep up with real time never gets that far ahead, so it is never paced
    speechLeadMs: 10_000,
    speechLeadMinAnswers: 12, // three quarters of the Thinker's 16 seats: c=10 and fewer are never paced
    speakingSlice: 4, // a step of 16 speaking answers in four: a newcomer waits for a quarter (bench/NOTES.md)
    // at light load the Thinker computes 45% of a prompt first, and the Talker prefills those rows while it computes
    // the rest: c=1 first audio ~2 ms sooner on tiny-omni, its first text ~2 ms later (bench/NOTES.md)
    firstPrefillSplit: 0.45,
  },
  engine: {
    maxNumSeqs: 16,
    maxNumBatchedTokens: 2048, // tokens per step (prefill chunk + decodes)
    threads: 1, // 1 intra-op thread per stage: 2 cores are shared by 3 stages plus the server
    // Thinker and Talker: with more requests than seats, a seat is held 8 steps before it goes to one waiting
    // (src/sched/ArScheduler.ts, seat turns): long answers cannot keep newcomers out.
    seatTurnSteps: 8,
    kvCacheBytes: 256 * 1024 * 1024, // 256 MiB: ~32k tokens of the tiny thinker (8 KiB/token)
    // Thinker and Talker: KV of finished requests kept for the next request that shares their prefix.
    prefixCache: { maxBytes: 128 * 1024 * 1024, blockPositions: 16 }, // 128 MiB: ~13k tiny-thinker positions + rows
    // Unless `migration: false`: a request is replayed at most twice, and only while its answer is under 4096 tokens;
    // it waits for a ready instance up to chunk_policy.chunk_timeout_ms (maxWaitMs null).
    migration: { maxAttempts: 2, maxReplayTokens: 4096, maxWaitMs: null },
  },
  sampling: {
    temperature: 0, // greedy
    topK: 0, // off
    topP: 1, // off
    repetitionPenalty: 1, // off
    frequencyPenalty: 0, // off
    presencePenalty: 0, // off
    seed: 0,
    ignoreEos: false,
  },
  replicas: 1,
  ecStore: {
    budgetBytes: 256 * 1024 * 1024, // 256 MiB of rows: ~340 thirty-second clips of the tiny thinker (768 KiB each)
    ttlSeconds: 600, // 10 min without a use
    keyPrefix: 'chorus', // without a redis connector to take it from
  },
  encoder: {
    // 64 MiB per encoder replica: ~85 thirty-second clips of the tiny thinker (768 KiB each)
    cacheBytes: 64 * 1024 * 1024,
    // embeddings started per step; a larger item still runs, alone (vLLM floors at the largest item)
    budgetEmbeddings: 2048,
    maxBatchSize: 8, // items per encoder run
    batchTimeoutMs: 5, // a partial batch waits this long for company
    onFailure: 'fail' as 'fail' | 'text_only',
    maxAudioSeconds: 20 * 60, // 20 min
    timeoutMs: 30_000, // 30 s from admission for an item's rows to reach the Thinker
  },
  video: {
    fps: 2, // frames sampled per second of video (Qwen2.5-VL's default)
    maxFrames: 32, // per clip; a longer clip is sampled uniformly (16 temporal groups)
    framePixels: 224 * 224, // a sampled frame's area at most: <= 64 rows per temporal group
    temporalPatchSize: 2, // frames per temporal patch, as Qwen2.5-VL
    maxSeconds: 600, // 10 min; the decoder stops at the first frame past it
    maxInputBytes: '12MiB', // under the HTTP body limit (16 MiB) as base64 (x 4/3)
    maxFrameBytes: '256MiB', // frames sampled before the max_frames pick: ~2,000 frames of 224 x 168
    decodeTimeoutMs: 20_000, // 20 s of decoder wall time per clip
    decodedCacheBytes: '64MiB', // decoded clips main keeps: ~16 clips of 30 frames at 252 x 168
    audioChunkSeconds: 2, // use_audio_in_video: frames then sound, 2 s at a time (Qwen2.5-Omni's seconds_per_chunk)
    // One clip's encode is one full-attention sequence (src/media/video/encodeMemory.ts): 4,096 patches is what
    // max_frames and frame_pixels above give at most (16 groups of 16 x 16), ~930 MiB estimated for tiny-omni's
    // vision encoder; lower it to bound the encoder's memory (a larger clip steps down under the fallback).
    maxPatchesPerEncode: 4096,
    // A clip's rows go to the Thinker this many temporal groups at a time, as they are encoded (docs/video.md).
    streamGroups: 2 as number | null,
    // A clip that does not fit: half the frames a step down to 4, then half the area down to 112 x 112 px.
    fallback: { framesFactor: 0.5, minFrames: 4, pixelsFactor: 0.5, minFramePixels: 112 * 112 },
  },
} as const;

export { parseByteSize } from '../common/yamlSchema.ts';
