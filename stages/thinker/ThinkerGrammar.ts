/**
 * The Thinker's grammar-constrained decoding (src/grammar): a request whose add args carry a grammar gets a matcher
 * for it; until the matcher is ready the request may prefill all but its last prompt position (the grammar is
 * compiled beside its prefill, not before it) and samples nothing; then each sampled step gets the matcher's mask,
 * and each sampled token advances it. The grammar accepting a stop token ends the answer.
 *
 * The engine (xgrammar's TokenizerInfo for this model's tokenizer, ~0.25 s for a 49k vocabulary) is made on the first
 * constrained request, so a Thinker that never sees one pays nothing. Requests without a grammar never touch this.
 */
import type { GrammarSpec } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { ModelSpec } from '../../src/common/modelSpec.ts';
import { GrammarEngine, grammarVocabOf, type GrammarStats, type RequestGrammar } from '../../src/grammar/index.ts';
import { createTokenizer } from '../../src/tokenizer/index.ts';

/** One request's grammar: its matcher once compiled (null while compiling). */
export interface GrammarUse {
  matcher: RequestGrammar | null;
  closed: boolean;
}

/** What a sampled token did to the grammar. */
export type GrammarStep = 'continue' | 'end' | 'refused';

export class ThinkerGrammar {
  private engine: Promise<GrammarEngine> | null = null;
  private engineReady: GrammarEngine | null = null;

  constructor(
    private readonly model: ModelSpec,
    /** The logits' width. */
    private readonly vocabSize: number,
  ) {}

  /** Starts compiling; `ready` runs once the matcher is set (not after close), `failed` if it cannot be. */
  open(spec: GrammarSpec, ready: () => void, failed: (err: ChorusError) => void): GrammarUse {
    const use: GrammarUse = { matcher: null, closed: false };
    this.engine ??= this.createEngine();
    this.engine
      .then((engine) => engine.open(spec))
      .then(
        (matcher) => {
          if (use.closed) return matcher.dispose();
          use.matcher = matcher;
          ready();
        },
        (cause: unknown) => {
          if (use.closed) return;
          const message = cause instanceof Error ? cause.message : String(cause);
          failed(
            new ChorusError(ErrorCodes.GRAMMAR_INVALID, `the grammar could not be compiled: ${message}`, { cause }),
          );
        },
      );
    return use;
  }

  private async createEngine(): Promise<GrammarEngine> {
    const m = this.model;
    const tokenizer = createTokenizer(m, this.vocabSize);
    const dir = m.source === 'file' ? m.tokenizer : undefined;
    const engine = await GrammarEngine.create(grammarVocabOf(tokenizer, dir), this.vocabSize);
    this.engineReady = engine;
    return engine;
  }

  /** The tokens the request may sample now. */
  mask(use: GrammarUse): Int32Array | undefined {
    return use.matcher?.mask();
  }

  /** Advances the grammar over a sampled token. */
  accept(use: GrammarUse, tokenId: number): GrammarStep {
    const m = use.matcher;
    if (!m) return 'refused';
    if (!m.accept(tokenId)) return 'refused';
    return m.terminated ? 'end' : 'continue';
  }

  close(use: GrammarUse): void {
    use.closed = true;
    use.matcher?.dispose();
    use.matcher = null;
  }

  get stats(): GrammarStats | null {
    return this.engineReady?.stats ?? null;
  }

  dispose(): void {
    this.engineReady?.dispose();
  }
}
