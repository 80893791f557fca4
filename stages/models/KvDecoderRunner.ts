/**
 * What the autoregressive runners over a KvDecoder share (the Thinker's and the Talker's): each sequence's KV in the
 * decoder and, beside it, the runner's own state of the sequence (the Thinker's tokens seen, the Talker's last
 * frame), which leaves with the KV.
 */
import type { KvDecoder } from './KvDecoder.ts';

export abstract class KvDecoderRunner {
  protected constructor(protected readonly decoder: KvDecoder) {}

  get kvBytesPerToken(): number {
    return this.decoder.kvBytesPerToken;
  }

  kvBytes(seqId: string): number {
    return this.decoder.kvBytes(seqId);
  }

  free(seqId: string): void {
    this.decoder.free(seqId);
    this.forget(seqId);
  }

  /** Drops the runner's own state of a sequence whose KV is freed. */
  protected abstract forget(seqId: string): void;
}
