/**
 * The Thinker's grammars: xgrammar's TokenizerInfo for its tokenizer (built once, on the first constrained
 * request), compiled grammars cached by spec (a bounded LRU: a schema's second request pays no compile), and a
 * RequestGrammar per request.
 *
 * xgrammar's own compiler cache is off: it has no bound in this build, and distinct client schemas would grow it
 * forever. A compiled grammar evicted here stays alive in the matchers that use it (xgrammar shares it by reference).
 */
import type { GrammarSpec } from '../common/engine.ts';
import type { GrammarVocab } from './grammarVocab.ts';
import { RequestGrammar } from './RequestGrammar.ts';
import { xgCall, xgrammar, type XgCompiledGrammar, type XgCompiler } from './xgrammar.ts';

/**
 * How JSON is laid out under a grammar: one line, json.dumps's separators (", " and ": "), no free whitespace. A
 * model under a grammar that allows any whitespace can spend its whole answer on spaces (vLLM's issue with it);
 * one layout also makes answers comparable. Main checks schemas with the same layout (checkGrammar.ts).
 */
export const JSON_LAYOUT = { anyWhitespace: false, indent: -1 } as const;

export interface GrammarStats {
  /** Grammars compiled since the stage started, and the time they took. */
  readonly compiles: number;
  readonly compileMs: number;
  /** Requests whose grammar was in the cache. */
  readonly cacheHits: number;
  readonly cached: number;
}

export function grammarKey(spec: GrammarSpec): string {
  return spec.type === 'json_object'
    ? 'json_object'
    : `${spec.type}:${spec.type === 'json_schema' ? spec.schema : spec.tag}`;
}

export class GrammarEngine {
  private readonly cache = new Map<string, XgCompiledGrammar>();
  private compiles = 0;
  private compileMs = 0;
  private cacheHits = 0;

  private constructor(
    private readonly compiler: XgCompiler,
    /** The logits' width: the mask covers every id a model can sample. */
    readonly vocabSize: number,
    private readonly maxCached: number,
  ) {}

  /** `vocabSize`: the logits' width (may exceed the tokenizer's vocabulary; those ids are never allowed). */
  static async create(vocab: GrammarVocab, vocabSize: number, maxCached = 64): Promise<GrammarEngine> {
    const xg = await xgrammar();
    const { value: info } = await xgCall(() =>
      xg.TokenizerInfo.createTokenizerInfo(vocab.vocab, vocab.vocabType, vocab.prependSpace, vocabSize, [
        ...vocab.stopTokenIds,
      ]),
    );
    const { value: compiler } = await xgCall(() => xg.GrammarCompiler.createGrammarCompiler(info, false));
    return new GrammarEngine(compiler, vocabSize, maxCached);
  }

  /** A fresh matcher at the start of the spec's grammar (compiled now, or taken from the cache). */
  async open(spec: GrammarSpec): Promise<RequestGrammar> {
    return RequestGrammar.create(await this.compiled(spec), this.vocabSize);
  }

  private async compiled(spec: GrammarSpec): Promise<XgCompiledGrammar> {
    const key = grammarKey(spec);
    const hit = this.cache.get(key);
    if (hit) {
      this.cacheHits++;
      this.cache.delete(key); // re-inserted: most recently used last
      this.cache.set(key, hit);
      return hit;
    }
    const started = performance.now();
    const { value } = await xgCall(() => {
      if (spec.type === 'json_object') return this.compiler.compileBuiltinJSONGrammar();
      if (spec.type === 'json_schema')
        return this.compiler.compileJSONSchema(spec.schema, JSON_LAYOUT.anyWhitespace, JSON_LAYOUT.indent);
      return this.compiler.compileStructuralTag(spec.tag);
    });
    this.compiles++;
    this.compileMs += performance.now() - started;
    this.cache.set(key, value);
    if (this.cache.size > this.maxCached) {
      const [oldestKey, oldest] = this.cache.entries().next().value as [string, XgCompiledGrammar];
      this.cache.delete(oldestKey);
      oldest.dispose();
    }
    return value;
  }

  get stats(): GrammarStats {
    return { compiles: this.compiles, compileMs: this.compileMs, cacheHits: this.cacheHits, cached: this.cache.size };
  }

  dispose(): void {
    for (const compiled of this.cache.values()) compiled.dispose();
    this.cache.clear();
    this.compiler.dispose();
  }
}
