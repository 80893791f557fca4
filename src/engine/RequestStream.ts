/**
 * The main-side view of one request: assembles output chunks from the final-output stages into OutputEvents
 * (detokenized text, PCM audio) and ends with exactly one `done`. Text and audio are independent: each arrives on
 * its own edge and is emitted the moment it lands.
 */
import { ReplaySubject } from 'rxjs';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason, OutputEvent, Usage } from './types.ts';
import { ErrorCodes, type SerializedError } from '../errors.ts';

export interface TextDecoderLike {
  push(tokenId: number): string;
  flush(): string;
}

export class RequestStream {
  readonly events = new ReplaySubject<OutputEvent>();
  private readonly open: Set<string>; // output stage ids whose final chunk has not arrived
  private done = false;
  private textReason: FinishReason | null = null;
  private completionTokens = 0;
  private audioSamples = 0;
  private audioSeq = 0;
  private sampleRateHz = 24_000;
  readonly startedAtMs = Date.now();
  firstTextAtMs: number | null = null;
  firstAudioAtMs: number | null = null;
  private readonly warnings = new Set<string>();

  constructor(
    readonly requestId: string,
    readonly stageInstances: ReadonlyMap<string, string>, // stageId -> instance used
    outputStages: readonly { stageId: string; type: 'text' | 'audio' }[],
    private readonly promptTokens: number,
    private readonly detokenizer: TextDecoderLike,
    private readonly samplesPerFrame: number,
    private readonly onEnd: (stream: RequestStream, reason: FinishReason) => void,
  ) {
    this.open = new Set(outputStages.map((s) => s.stageId));
    this.kinds = new Map(outputStages.map((s) => [s.stageId, s.type]));
  }

  private readonly kinds: Map<string, 'text' | 'audio'>;

  get finished(): boolean {
    return this.done;
  }

  /** Notes for the done event (a Thinker that dropped a media item). Reported by chunk and by message: deduplicated. */
  addWarnings(warnings: readonly string[]): void {
    for (const w of warnings) this.warnings.add(w);
  }

  onChunk(fromStageId: string, chunk: ReceivedChunk): void {
    if (this.done) return;
    const m = chunk.meta;
    if (m.final && Array.isArray(m.payload.warnings)) this.addWarnings(m.payload.warnings as string[]);
    if (this.kinds.get(fromStageId) === 'text') this.onText(chunk);
    else this.onAudio(chunk);
    if (!m.final) return;
    this.open.delete(fromStageId);
    if (m.finishReason === 'error' || m.finishReason === 'cancelled') {
      this.end(m.finishReason, m.error);
      return;
    }
    if (this.kinds.get(fromStageId) === 'text') this.textReason = m.finishReason ?? 'stop';
    if (this.open.size === 0) this.end(this.textReason ?? m.finishReason ?? 'stop');
  }

  private onText(chunk: ReceivedChunk): void {
    const ids = (chunk.meta.payload.tokenIds as number[] | undefined) ?? [];
    let delta = '';
    for (const id of ids) delta += this.detokenizer.push(id);
    if (chunk.meta.final) delta += this.detokenizer.flush();
    this.completionTokens += ids.length;
    if (delta.length === 0 && ids.length === 0) return;
    const atMs = Date.now();
    this.firstTextAtMs ??= atMs;
    this.events.next({ type: 'text', delta, tokenIds: ids, atMs });
  }

  private onAudio(chunk: ReceivedChunk): void {
    const pcm = chunk.tensors.pcm;
    const rate = chunk.meta.payload.sampleRateHz;
    if (typeof rate === 'number') this.sampleRateHz = rate;
    if (!pcm || pcm.data.length === 0) return;
    // Copy out of the frame buffer: events may be held by slow consumers long after the frame is gone.
    const samples = Float32Array.from(pcm.data as Float32Array);
    const atMs = Date.now();
    this.firstAudioAtMs ??= atMs;
    this.audioSamples += samples.length;
    this.events.next({ type: 'audio', pcm: samples, sampleRateHz: this.sampleRateHz, seq: this.audioSeq++, atMs });
  }

  /** Ends the stream (idempotent): a cancel, an error, or all outputs complete. */
  end(reason: FinishReason, error?: SerializedError): void {
    if (this.done) return;
    this.done = true;
    const usage: Usage = {
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      audioFrames: Math.round(this.audioSamples / this.samplesPerFrame),
      audioSeconds: this.audioSamples / this.sampleRateHz,
    };
    const err = reason === 'error' ? (error ?? { code: ErrorCodes.INTERNAL, message: 'request failed' }) : undefined;
    const warnings = this.warnings.size > 0 ? { warnings: [...this.warnings] } : {};
    this.events.next({ type: 'done', finishReason: reason, ...(err ? { error: err } : {}), usage, atMs: Date.now(), ...warnings });
    this.events.complete();
    this.onEnd(this, reason);
  }
}
