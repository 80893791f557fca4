/**
 * The Code2Wav stage: one decode per chunk. Every request with a ready chunk joins the next batch (up to
 * max_num_seqs, one chunk per request: a stateful vocoder carries each request's state from chunk to chunk);
 * each chunk's audio (minus its left-context samples) goes to main in order, the last one final. A request's
 * vocoder state is freed with the request (finish, fail or abort).
 */
import type { Code2WavItem, Code2WavRunner } from '../types.ts';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { AudioBody } from '../../src/common/payloads.ts';
import { AudioStageCore, audioRequestOf, type AudioRequest } from '../../src/worker/AudioStageCore.ts';
import type { AddRequest, StageStats } from '../../src/worker/messages.ts';
import type { StageContext } from '../../src/worker/StageCore.ts';
import type { Code2WavArgs, Code2WavKindStats } from './protocol.ts';

interface PendingChunk {
  readonly codes: Int32Array;
  readonly numFrames: number;
  readonly contextFrames: number;
  readonly final: FinishReason | null;
}

interface Code2WavRequest extends AudioRequest {
  readonly chunks: PendingChunk[];
}

export class Code2WavCore extends AudioStageCore<Code2WavRequest, Code2WavArgs> {
  /** Frames of audio sent since start (the denominator of the decode ratio in the stats). */
  private audioFrames = 0;

  constructor(
    ctx: StageContext,
    private readonly runner: Code2WavRunner,
  ) {
    // First chunks first: a newcomer's first audio does not wait in the long answers' batch (GenerationScheduler).
    super(ctx, true);
  }

  /** Code2Wav waits for the Talker's first frames after an add: an idle one warms its weights meanwhile. */
  protected override warmModel(): void {
    this.runner.warm();
  }

  protected admit(msg: AddRequest<Code2WavArgs>): Code2WavRequest {
    return {
      ...audioRequestOf(msg),
      chunks: [],
    };
  }

  protected onChunk(req: Code2WavRequest, chunk: ReceivedChunk): void {
    const final = chunk.meta.final ? (chunk.meta.finishReason ?? 'stop') : null;
    const body = chunk.body;
    if (body === null) {
      if (!final) return this.fail(req, unexpected(`a non-final chunk of ${req.requestId} carries no codes`));
      req.chunks.push({ codes: new Int32Array(0), numFrames: 0, contextFrames: 0, final });
    } else {
      if (body.kind !== 'codecFrames')
        return this.fail(req, unexpected(`code2wav takes codec frames, got ${body.kind}`));
      if (body.numCodebooks !== this.runner.numCodebooks) {
        return this.fail(
          req,
          unexpected(`codes with ${body.numCodebooks} codebooks, code2wav expects ${this.runner.numCodebooks}`),
        );
      }
      // Copy: the frame buffer belongs to the receive path; the chunk waits for a batch.
      req.chunks.push({
        codes: Int32Array.from(body.codes),
        numFrames: body.numFrames,
        contextFrames: body.contextFrames,
        final,
      });
    }
    this.scheduler.chunkArrived(req.requestId);
    this.updateDeadline(req);
  }

  protected override freeRunnerState(requestId: string): void {
    this.runner.free(requestId);
  }

  override stats(): StageStats {
    const kind: Code2WavKindStats = {
      code2wav: {
        framesDecoded: this.runner.framesDecoded,
        audioFrames: this.audioFrames,
        states: this.runner.numStates,
      },
    };
    return { ...super.stats(), kind };
  }

  step(): boolean {
    const nowMs = Date.now();
    const items = this.scheduler.schedule(nowMs, this.deferredNow(nowMs));
    if (items.length === 0) return false;
    const started = performance.now();
    const work: { req: Code2WavRequest; chunk: PendingChunk }[] = items.map(({ requestId }) => {
      const req = this.requests.get(requestId)!;
      return { req, chunk: req.chunks.shift()! };
    });
    this.scheduler.update(items);
    const decodable = work.filter((w) => w.chunk.numFrames > w.chunk.contextFrames);
    let audio: Float32Array[] = [];
    try {
      const items = decodable.map((w): Code2WavItem => ({
        seqId: w.req.requestId,
        codes: w.chunk.codes,
        numFrames: w.chunk.numFrames,
        contextFrames: w.chunk.contextFrames,
      }));
      audio = this.timeModel(() => this.runner.decode(items));
    } catch (err) {
      for (const w of work)
        this.fail(
          w.req,
          new ChorusError(ErrorCodes.STAGE_FAILED, `code2wav decode failed: ${String(err)}`, { cause: err }),
        );
      return true;
    }
    const sentAtMs = Date.now();
    for (const w of work) {
      const i = decodable.indexOf(w);
      const pcm = i >= 0 ? audio[i] : new Float32Array(0);
      if (pcm.length > 0) this.audioSent(w.req, (pcm.length / this.runner.sampleRateHz) * 1000, sentAtMs);
      const body: AudioBody = { kind: 'audio', pcm, sampleRateHz: this.runner.sampleRateHz };
      w.req.numOutputs += w.chunk.numFrames - w.chunk.contextFrames;
      if (i >= 0) this.audioFrames += w.chunk.numFrames - w.chunk.contextFrames;
      if (w.chunk.final) this.finish(w.req, w.chunk.final, () => (pcm.length > 0 ? body : undefined));
      else if (pcm.length > 0) this.send(w.req, w.req.downstream, body);
    }
    this.recordStep(work.length, started, () =>
      work.map((w) => [w.req.requestId, w.chunk.numFrames - w.chunk.contextFrames] as const),
    );
    return true;
  }
}

function unexpected(message: string): ChorusError {
  return new ChorusError(ErrorCodes.FRAME_INVALID, message);
}
