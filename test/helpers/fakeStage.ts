/** A stage core without a process: a recording adapter, a StageContext, and hand-made received chunks. */
import type { StageSpec } from '../../src/common/graph.ts';
import { logger } from '../../src/common/log.ts';
import type { MainToStage, StageToMain } from '../../src/worker/messages.ts';
import type { StageContext, StageCore } from '../../src/worker/StageCore.ts';
import type {
  ChunkTransferAdapter,
  ExpectOptions,
  OutgoingChunk,
  ReceivedChunk,
  SendTarget,
} from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { ChunkBody } from '../../src/common/payloads.ts';
import type { SerializedError } from '../../src/common/errors.ts';
import type { FinishReason } from '../../src/common/engine.ts';

export interface SentChunk {
  readonly requestId: string;
  readonly to: string;
  readonly final: boolean;
  /** The chunk's body (undefined on an empty final chunk). */
  readonly body: ChunkBody | undefined;
  readonly finishReason?: FinishReason;
  readonly error?: SerializedError;
}

/** Records what a core sends and expects; nothing arrives by itself (tests call core.onArrivals). */
export class FakeAdapter {
  readonly sent: SentChunk[] = [];
  readonly expected: { requestId: string; from: string }[] = [];
  readonly stopped: { requestId: string; from: string }[] = [];
  readonly cancelled: string[] = [];
  /** Requests let go everywhere (abandon: main's abort), also in `cancelled`. */
  readonly abandoned: string[] = [];

  expect(requestId: string, o: ExpectOptions): void {
    this.expected.push({ requestId, from: o.fromInstance });
  }

  saveAsync(requestId: string, target: SendTarget, chunk: OutgoingChunk): Promise<void> {
    this.sent.push({
      requestId,
      to: target.toInstance,
      final: chunk.final,
      body: chunk.body,
      finishReason: chunk.finishReason,
      error: chunk.error,
    });
    return Promise.resolve();
  }

  stopReceiving(requestId: string, from: string): void {
    this.stopped.push({ requestId, from });
  }

  cancel(requestId: string): void {
    this.cancelled.push(requestId);
  }

  abandon(requestId: string): void {
    this.cancel(requestId);
    this.abandoned.push(requestId);
  }

  /** Sent chunks to one target, in order. */
  to(instance: string): SentChunk[] {
    return this.sent.filter((c) => c.to === instance);
  }
}

export function stageContext(spec: StageSpec, adapter: FakeAdapter): StageContext & { readonly posted: StageToMain[] } {
  const posted: StageToMain[] = [];
  return {
    spec,
    chunkPolicy: {
      initialCodecChunkFrames: null,
      codecChunkFrames: 25,
      codecLeftContextFrames: 25,
      dynamicInitialChunk: true,
      chunkTimeoutMs: 30_000,
      maxChunkWaitMs: 300_000,
      ttfpTargetMs: null,
      firstPacketHold: true,
      firstAudioFirst: true,
      speechLeadMs: null,
      speechLeadMinAnswers: 12,
      speakingSlice: 4,
      firstPrefillSplit: 0.45,
    },
    asyncChunk: true,
    scheduling: 'fifo',
    adapter: adapter as unknown as ChunkTransferAdapter,
    post: (msg) => posted.push(msg),
    log: logger.child({ test: true }),
    posted,
  };
}

let seqs = new Map<string, number>();

/** A chunk as the adapter would deliver it (seq counted per request and producer); body null = empty final. */
export function received(
  requestId: string,
  from: string,
  to: string,
  body: ChunkBody | null,
  final = false,
): ReceivedChunk {
  const k = `${requestId} ${from}`;
  const seq = seqs.get(k) ?? 0;
  seqs.set(k, seq + 1);
  return {
    meta: { requestId, from, to, seq, final, sentAtMs: Date.now() },
    body,
    bytes: 0,
    receivedAtMs: Date.now(),
    gotAtMs: 0,
  };
}

export function resetSeqs(): void {
  seqs = new Map();
}

/** Hands a kind message to a core as the step loop does (StageLoop.handle, case 'kind'). */
export function deliverKind(core: Pick<StageCore, 'onKindMessage'>, msg: MainToStage): void {
  if (msg.type !== 'kind') throw new Error(`not a kind message: ${msg.type}`);
  core.onKindMessage(msg.requestId, msg.body);
}
