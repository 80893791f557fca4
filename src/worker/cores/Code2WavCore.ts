/**
 * The Code2Wav stage: one-shot decode per chunk. Every request with a ready chunk joins the next batch (up to
 * max_num_seqs); each chunk's audio (minus its left-context samples) goes to main in order, the last one final.
 */
import { GenerationScheduler } from '../../sched/GenerationScheduler.ts';
import type { Code2WavItem, Code2WavRunner } from '../../../stages/types.ts';
import type { ReceivedChunk } from '../../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../engine/types.ts';
import { ChorusError, ErrorCodes } from '../../errors.ts';
import type { AddRequest } from '../messages.ts';
import { StageCore, type CoreRequest, type StageContext } from '../StageCore.ts';

interface PendingChunk {
  readonly codes: Int32Array;
  readonly numFrames: number;
  readonly contextFrames: number;
  readonly final: FinishReason | null;
}

interface Code2WavRequest extends CoreRequest {
  readonly chunks: PendingChunk[];
}

export class Code2WavCore extends StageCore<Code2WavRequest> {
  private readonly scheduler: GenerationScheduler;

  constructor(ctx: StageContext, private readonly runner: Code2WavRunner) {
    super(ctx);
    this.scheduler = new GenerationScheduler(ctx.spec.engine.maxNumSeqs);
  }

  protected admit(msg: AddRequest): Code2WavRequest {
    return { requestId: msg.requestId, sampling: msg.sampling, downstream: msg.downstream, numOutputs: 0, chunks: [] };
  }

  protected onChunk(req: Code2WavRequest, chunk: ReceivedChunk): void {
    const codes = chunk.tensors.codes;
    const final = chunk.meta.final ? (chunk.meta.finishReason ?? 'stop') : null;
    if (!codes) {
      if (!final) return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, `non-final chunk of ${req.requestId} carries no codes`));
      req.chunks.push({ codes: new Int32Array(0), numFrames: 0, contextFrames: 0, final });
    } else {
      if (codes.shape[0] !== this.runner.numCodebooks) {
        return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, `codes with ${codes.shape[0]} codebooks, code2wav expects ${this.runner.numCodebooks}`));
      }
      const contextFrames = Number(chunk.meta.payload.contextFrames ?? 0);
      req.chunks.push({ codes: Int32Array.from(codes.data as Int32Array), numFrames: codes.shape[1], contextFrames, final });
    }
    this.scheduler.chunkArrived(req.requestId);
  }

  pause(requestId: string): void {
    this.scheduler.pause(requestId);
  }

  resume(requestId: string): void {
    this.scheduler.resume(requestId);
  }

  protected queueDepth(): number {
    return this.scheduler.queueDepth;
  }

  protected freeState(req: Code2WavRequest): void {
    this.scheduler.remove(req.requestId);
  }

  step(): boolean {
    const items = this.scheduler.schedule();
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
      audio = this.runner.decode(
        decodable.map((w): Code2WavItem => ({ seqId: w.req.requestId, codes: w.chunk.codes, numFrames: w.chunk.numFrames, contextFrames: w.chunk.contextFrames })),
      );
    } catch (err) {
      for (const w of work) this.fail(w.req, new ChorusError(ErrorCodes.STAGE_FAILED, `code2wav decode failed: ${String(err)}`, { cause: err }));
      return true;
    }
    for (const w of work) {
      const i = decodable.indexOf(w);
      const pcm = i >= 0 ? audio[i] : new Float32Array(0);
      const chunk = pcm.length > 0 ? { payload: { sampleRateHz: this.runner.sampleRateHz }, tensors: { pcm: { data: pcm, shape: [pcm.length] } } } : { payload: { sampleRateHz: this.runner.sampleRateHz } };
      w.req.numOutputs += w.chunk.numFrames - w.chunk.contextFrames;
      if (w.chunk.final) this.finish(w.req, w.chunk.final, () => chunk);
      else if (pcm.length > 0) this.send(w.req, w.req.downstream, chunk);
    }
    this.recordStep(work.length, started);
    return true;
  }
}
