/**
 * A test double of the Engine for protocol-level server tests: it plays a script of text deltas, audio chunks
 * and waits per request, honours cancel/pause/resume, and records every call so tests can assert on them.
 *
 * Audio content is a counter: sample n of a request is (n mod 30000) / 32767, which pcm16-encodes to exactly
 * n mod 30000. A client can therefore check order, loss, duplication and encoding of every sample.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ReplaySubject } from 'rxjs';
import { GREEDY_SAMPLING } from '../../src/common/samplingParams.ts';
import type { RealtimeResumeSettings } from '../../src/common/realtimeSettings.ts';
import type { StageGraph, StageSpec } from '../../src/common/graph.ts';
import type {
  Engine,
  FinishReason,
  GenerateRequest,
  OutputEvent,
  RequestHandle,
  StageHealth,
} from '../../src/common/engine.ts';
import type { ErrorCode } from '../../src/common/errors.ts';

export type ScriptStep =
  | { readonly kind: 'text'; readonly delta: string }
  | { readonly kind: 'audio'; readonly samples: number }
  | { readonly kind: 'wait'; readonly ms: number }
  | { readonly kind: 'fail'; readonly code: ErrorCode; readonly message: string };

export const SAMPLE_MODULUS = 30000;

/** The pcm16 values a client should have received for the first `count` samples of a request. */
export function expectedPcm16(count: number): Int16Array {
  const out = new Int16Array(count);
  for (let i = 0; i < count; i++) out[i] = i % SAMPLE_MODULUS;
  return out;
}

/** Default script: `tokens` text deltas; with audio, a chunk of `chunkSamples` after every `tokensPerChunk` tokens. */
export function defaultScript(
  opts: { tokens?: number; chunkSamples?: number; tokensPerChunk?: number; stepMs?: number } = {},
) {
  const tokens = opts.tokens ?? 8;
  const chunkSamples = opts.chunkSamples ?? 4800;
  const tokensPerChunk = opts.tokensPerChunk ?? 2;
  return (request: GenerateRequest): ScriptStep[] => {
    const steps: ScriptStep[] = [];
    for (let i = 0; i < tokens; i++) {
      if (opts.stepMs) steps.push({ kind: 'wait', ms: opts.stepMs });
      steps.push({ kind: 'text', delta: `w${i} ` });
      if (request.modalities.includes('audio') && (i + 1) % tokensPerChunk === 0)
        steps.push({ kind: 'audio', samples: chunkSamples });
    }
    return steps;
  };
}

export class TestHandle implements RequestHandle {
  readonly requestId: string;
  readonly request: GenerateRequest;
  /** A scripted engine's prompt: 5 text tokens, whatever the request says. */
  readonly prompt = { text: 5, audio: 0, image: 0, video: 0 };
  readonly events = new ReplaySubject<OutputEvent>();
  cancelCalls = 0;
  pauseCalls = 0;
  resumeCalls = 0;
  /** Resolves with the finish reason once 'done' has been emitted. */
  readonly finished: Promise<FinishReason>;
  #finish!: (reason: FinishReason) => void;
  #ended = false;
  #paused = false;
  #resumed: (() => void) | null = null;
  readonly #pauseWaiters: (() => void)[] = [];
  #sampleCursor = 0;
  #audioSeq = 0;
  #textTokens = 0;

  constructor(requestId: string, request: GenerateRequest, steps: readonly ScriptStep[], finishReason: FinishReason) {
    this.requestId = requestId;
    this.request = request;
    this.finished = new Promise((resolve) => (this.#finish = resolve));
    void this.#run(steps, finishReason);
  }

  get ended(): boolean {
    return this.#ended;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get samplesEmitted(): number {
    return this.#sampleCursor;
  }

  cancel(): void {
    this.cancelCalls++;
    this.#end('cancelled');
  }

  pause(): void {
    this.pauseCalls++;
    this.#paused = true;
    for (const w of this.#pauseWaiters.splice(0)) w();
  }

  /** Resolves at the first pause() call (at once if one happened already). */
  whenPaused(): Promise<void> {
    if (this.pauseCalls > 0) return Promise.resolve();
    return new Promise((resolve) => this.#pauseWaiters.push(resolve));
  }

  resume(): void {
    this.resumeCalls++;
    this.#paused = false;
    this.#resumed?.();
    this.#resumed = null;
  }

  async #run(steps: readonly ScriptStep[], finishReason: FinishReason): Promise<void> {
    for (const step of steps) {
      // One step per macrotask, like a real engine delivering outputs between socket writes.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.#paused && !this.#ended) await new Promise<void>((resolve) => (this.#resumed = resolve));
      if (this.#ended) return;
      if (step.kind === 'wait') await delay(step.ms);
      else if (step.kind === 'text') {
        this.#textTokens++;
        this.events.next({ type: 'text', delta: step.delta, tokenIds: [this.#textTokens], atMs: performance.now() });
      } else if (step.kind === 'audio') {
        const pcm = new Float32Array(step.samples);
        for (let i = 0; i < pcm.length; i++) pcm[i] = ((this.#sampleCursor + i) % SAMPLE_MODULUS) / 32767;
        this.#sampleCursor += pcm.length;
        this.events.next({ type: 'audio', pcm, sampleRateHz: 24000, seq: this.#audioSeq++, atMs: performance.now() });
      } else {
        this.#end('error', { code: step.code, message: step.message });
        return;
      }
      if (this.#ended) return;
    }
    this.#end(finishReason);
  }

  #end(reason: FinishReason, error?: { code: ErrorCode; message: string }): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resumed?.();
    const usage = {
      promptTokens: 5,
      promptTokenDetails: this.prompt,
      completionTokens: this.#textTokens,
      audioFrames: Math.ceil(this.#sampleCursor / 1920),
      audioSeconds: this.#sampleCursor / 24000,
    };
    this.events.next({
      type: 'done',
      finishReason: reason,
      usage,
      atMs: performance.now(),
      ...(error ? { error } : {}),
    });
    this.events.complete();
    this.#finish(reason);
  }
}

function stage(
  stageId: string,
  kind: StageSpec['kind'],
  from: string | null,
  finalOutputType: 'text' | 'audio' | null,
): StageSpec {
  const sampling = { ...GREEDY_SAMPLING, maxTokens: 64 };
  return {
    stageId,
    kind,
    workerType: kind === 'code2wav' ? 'generation' : 'ar',
    model: { source: 'file', path: `/nonexistent/${stageId}.onnx` },
    engine: { maxNumSeqs: 8, maxNumBatchedTokens: 512, threads: 1, kvCacheBytes: 1 << 20, prefixCache: null },
    inputs: from ? [{ from, connector: 'shm0' }] : [],
    finalOutput: finalOutputType !== null,
    finalOutputType,
    defaultSamplingParams: sampling,
    replicas: 1,
    placement: 'local',
    minReplicas: 0,
    joinable: false,
  };
}

export const testGraph: StageGraph = {
  file: '/configs/test-omni.yaml',
  asyncChunk: true,
  scheduling: 'fifo',
  routing: 'least_loaded',
  kvPredictionMs: 1000,
  stageHangMs: 2_000,
  stageNice: 0,
  modelsDir: '/tmp/models',
  connectors: { shm0: { name: 'shm0', kind: 'shm', options: {} } },
  chunkPolicy: {
    initialCodecChunkFrames: null,
    codecChunkFrames: 25,
    codecLeftContextFrames: 25,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 5000,
    maxChunkWaitMs: 50_000,
    ttfpTargetMs: null,
    firstPacketHold: true,
    firstAudioFirst: true,
    speechLeadMs: null,
    speechLeadMinAnswers: 12,
    speakingSlice: 4,
    firstPrefillSplit: 0.45,
  },
  stages: [
    stage('thinker', 'thinker', null, 'text'),
    stage('talker', 'talker', 'thinker', null),
    stage('code2wav', 'code2wav', 'talker', 'audio'),
  ],
  entryStageId: 'thinker',
};

export interface TestEngineOptions {
  readonly script?: (request: GenerateRequest) => ScriptStep[];
  readonly finishReason?: FinishReason;
  /** The graph's Realtime resume settings (YAML `realtime:`); absent: the defaults. */
  readonly realtimeResume?: RealtimeResumeSettings;
}

export class TestEngine implements Engine {
  readonly graph: StageGraph;
  // what a 24 kHz, 12.5 frames/s vocoder reports (its audio is not tied to tokens: framesPerToken unknown)
  readonly audioOutput = { sampleRateHz: 24000, samplesPerFrame: 1920, framesPerToken: null };
  readonly handles: TestHandle[] = [];
  script: (request: GenerateRequest) => ScriptStep[];
  finishReason: FinishReason;
  healthStatus: StageHealth['status'][] = ['ready', 'ready', 'ready'];
  #nextId = 0;

  constructor(opts: TestEngineOptions = {}) {
    this.script = opts.script ?? defaultScript();
    this.finishReason = opts.finishReason ?? 'stop';
    this.graph = opts.realtimeResume ? { ...testGraph, realtimeResume: opts.realtimeResume } : testGraph;
  }

  get lastHandle(): TestHandle {
    const h = this.handles.at(-1);
    if (!h) throw new Error('no request was generated');
    return h;
  }

  generate(request: GenerateRequest): TestHandle {
    const handle = new TestHandle(
      request.requestId ?? `req-${this.#nextId++}`,
      request,
      this.script(request),
      this.finishReason,
    );
    this.handles.push(handle);
    return handle;
  }

  health(): readonly StageHealth[] {
    return this.graph.stages.map((s, i) => ({
      stageId: s.stageId,
      replica: 0,
      status: this.healthStatus[i],
      pid: 1000 + i,
      restarts: 0,
      inFlight: this.handles.filter((h) => !h.ended).length,
    }));
  }

  async close(): Promise<void> {
    for (const h of this.handles) if (!h.ended) h.cancel();
  }
}
