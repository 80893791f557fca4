/** A fake ThinkerRunner for ThinkerCore tests: token 300 at every sampling step, a KV length per sequence. */
import type { StageSpec } from '../../src/common/graph.ts';
import type { ThinkerArgs } from '../../stages/thinker/protocol.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import type { ThinkerBatchItem, ThinkerRunner, ThinkerStepOutput } from '../../stages/types.ts';
import type { AddRequest } from '../../src/worker/messages.ts';
import { FakeAdapter, stageContext } from './fakeStage.ts';

const D = 4;

/** Keeps a KV length per sequence, as the real runner's caches would hold. */
export class KvLengthRunner implements ThinkerRunner {
  static readonly hiddenSize = D;
  readonly hiddenSize = D;
  readonly vocabSize = 512;
  readonly eosTokenId: number = 256;
  readonly supports = { inputsEmbeds: true, hiddenStates: true, embeddings: true };
  readonly kvBytesPerToken = 8;
  readonly kv = new Map<string, number>();
  readonly steps: ThinkerBatchItem[] = [];
  /** Keep-warm steps run (warm). */
  warms = 0;

  embed(ids: readonly number[]): Float32Array {
    const out = new Float32Array(ids.length * D);
    ids.forEach((id, i) => out.set([id, 1, 2, 3], i * D));
    return out;
  }

  execute(items: readonly ThinkerBatchItem[]): ThinkerStepOutput[] {
    return items.map((it) => {
      this.steps.push(it);
      this.kv.set(it.seqId, (this.kv.get(it.seqId) ?? 0) + it.numTokens);
      return {
        seqId: it.seqId,
        tokenId: it.sample ? 300 : null,
        embeds: it.inputsEmbeds ?? this.embed(it.tokenIds!),
        hidden: new Float32Array(it.numTokens * D).fill(7),
      };
    });
  }

  warm(): void {
    this.warms++;
  }

  kvBytes(seqId: string): number {
    return (this.kv.get(seqId) ?? 0) * this.kvBytesPerToken;
  }
  free(seqId: string): void {
    this.kv.delete(seqId);
  }
  moveSequence(from: string, to: string, keep: number): void {
    const n = this.kv.get(from);
    this.kv.delete(from);
    if (n === undefined) throw new Error(`no sequence ${from}`);
    this.kv.set(to, Math.min(n, keep));
  }
  copySequence(from: string, to: string, keep: number): void {
    const n = this.kv.get(from);
    if (n === undefined) throw new Error(`no sequence ${from}`);
    this.kv.set(to, Math.min(n, keep));
  }
  async close(): Promise<void> {}
}

/**
 * A ThinkerCore on a KvLengthRunner holding one spoken request 'r' (its rows go to talker#0, its text to main), never
 * stopping before maxTokens.
 */
export function spokenThinker(
  spec: StageSpec,
  maxTokens: number,
  args: ThinkerArgs,
): { core: ThinkerCore; adapter: FakeAdapter; runner: KvLengthRunner } {
  const adapter = new FakeAdapter();
  const runner = new KvLengthRunner();
  const core = new ThinkerCore(stageContext(spec, adapter), runner);
  core.add({
    type: 'add',
    requestId: 'r',
    sampling: { ...spec.defaultSamplingParams, maxTokens, ignoreEos: true },
    downstream: [
      { instance: 'main', stageId: 'main' },
      { instance: 'talker#0', stageId: 'talker' },
    ],
    upstreams: [],
    args,
    firstChunkDeadline: Date.now() + 30_000,
  });
  return { core, adapter, runner };
}

/** A text prompt's add for a ThinkerCore test: two tokens at most, its text to main. */
export function textAdd(spec: StageSpec, requestId: string, promptTokenIds: number[]): AddRequest<ThinkerArgs> {
  return {
    type: 'add',
    requestId,
    sampling: { ...spec.defaultSamplingParams, maxTokens: 2, ignoreEos: true },
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [],
    args: { promptTokenIds },
    firstChunkDeadline: Date.now() + 30_000,
  };
}
