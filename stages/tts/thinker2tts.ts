/**
 * What the Thinker sends a tts stage: the token ids it samples, as text chunks (the tts stage detokenizes them with
 * the Thinker's own tokenizer), one chunk per step. With async_chunk off, they accumulate and go out once, in the
 * final chunk: the same text, fewer chunks.
 */
import type { TextBody } from '../../src/common/payloads.ts';
import type { TextFeed } from '../StageKindDescriptor.ts';

export class Thinker2Tts implements TextFeed {
  private pending: number[] = [];

  constructor(private readonly asyncChunk: boolean) {}

  push(tokenId: number): void {
    this.pending.push(tokenId);
  }

  /** The chunk to send now: with `final`, whatever remains (possibly no ids); otherwise null until there is some. */
  take(final: boolean): TextBody | null {
    if (!final && (!this.asyncChunk || this.pending.length === 0)) return null;
    const body: TextBody = { kind: 'text', tokenIds: this.pending };
    this.pending = [];
    return body;
  }
}
