/**
 * The one loader of xgrammar's WebAssembly build (@mlc-ai/web-xgrammar, pinned to 0.1.27), and the part of its
 * surface Chorus uses, typed.
 *
 * Its lib/index.js is a UMD bundle in a package marked "type": "module": imported as ESM it exports nothing, and its
 * Node branch needs CommonJS's `require` and `__filename`. So it is compiled here as a CommonJS function body
 * (vm.compileFunction) with two edits, each checked, so that a different build fails loudly at load, never silently:
 * - its `await import('module')` becomes `require('module')` (a dynamic import inside vm code needs a Node flag);
 * - its private emscripten module (`binding`) is handed out, for the two calls a decode step makes synchronously:
 *   the public getNextTokenBitmask() is async only to await the module's start, and a step cannot await.
 * The bundle's `console` is ours: xgrammar prints why a schema or regex is refused ("[FATAL] ... Unsupported type")
 * before it aborts with a bare "Aborted()", so that text is caught and becomes the error's message.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import vm from 'node:vm';

/** A vector<int32> the emscripten module hands out: freed with delete(). */
interface NativeIntVector {
  delete(): void;
}

interface NativeMatcher {
  AcceptToken(tokenId: number, verbose: boolean): boolean;
  GetNextTokenBitmask(vocabSize: number): NativeIntVector;
  IsTerminated(): boolean;
  Rollback(numTokens: number): void;
  Reset(): void;
  delete(): void;
}

export interface XgTokenizerInfo {
  getVocabSize(): number;
  dispose(): void;
}

export interface XgCompiledGrammar {
  readonly handle: unknown;
  dispose(): void;
}

export interface XgGrammar {
  toString(): string;
  dispose(): void;
}

export interface XgCompiler {
  compileJSONSchema(
    schema: string,
    anyWhitespace?: boolean,
    indent?: number,
    separators?: [string, string],
    strictMode?: boolean,
  ): Promise<XgCompiledGrammar>;
  compileBuiltinJSONGrammar(): Promise<XgCompiledGrammar>;
  compileStructuralTag(structuralTag: string): Promise<XgCompiledGrammar>;
  dispose(): void;
}

interface XgModule {
  TokenizerInfo: {
    createTokenizerInfo(
      vocab: string[],
      vocabType: string,
      prependSpace: boolean,
      vocabSize: number,
      stopTokenIds: number[],
    ): Promise<XgTokenizerInfo>;
  };
  GrammarCompiler: { createGrammarCompiler(info: XgTokenizerInfo, cacheEnabled?: boolean): Promise<XgCompiler> };
  Grammar: {
    fromJSONSchema(
      schema: string,
      anyWhitespace?: boolean,
      indent?: number,
      separators?: [string, string],
      strictMode?: boolean,
    ): Promise<XgGrammar>;
    fromStructuralTag(structuralTag: string): Promise<XgGrammar>;
  };
  GrammarMatcher: { createGrammarMatcher(compiled: XgCompiledGrammar): Promise<{ handle: NativeMatcher }> };
  __chorusBinding(): { vecIntToView(v: NativeIntVector): Int32Array } | null;
}

/** What xgrammar printed (its reasons) during the current call; read by withDiagnostics. */
let printed: string[] = [];
const bundleConsole = {
  ...console,
  log: (...args: unknown[]) => printed.push(args.map(String).join(' ')),
  warn: (...args: unknown[]) => printed.push(args.map(String).join(' ')),
  error: (...args: unknown[]) => printed.push(args.map(String).join(' ')),
};

let loaded: Promise<XgModule> | null = null;

function edit(source: string, from: string, to: string): string {
  if (!source.includes(from))
    throw new Error(`@mlc-ai/web-xgrammar is not the 0.1.27 build Chorus loads (no "${from}" in it): pin 0.1.27`);
  return source.replace(from, to);
}

async function load(): Promise<XgModule> {
  const require = createRequire(import.meta.url);
  const file = require.resolve('@mlc-ai/web-xgrammar');
  let source = readFileSync(file, 'utf8');
  source = edit(source, "await import('module')", "require('module')");
  source = edit(source, 'let binding = null;', 'let binding = null; exports.__chorusBinding = () => binding;');
  const params = ['exports', 'require', 'module', '__filename', '__dirname', 'console'];
  const body = vm.compileFunction(source, params, { filename: file });
  const mod = { exports: {} as XgModule };
  body.call(mod.exports, mod.exports, createRequire(file), mod, file, dirname(file), bundleConsole);
  // The emscripten module starts on the first call: make it now, so that every later call is synchronous inside.
  (await mod.exports.Grammar.fromJSONSchema('{"type": "boolean"}')).dispose();
  return mod.exports;
}

/** The module, loaded once per process (the first call costs ~30 ms: the WebAssembly instance starts). */
export function xgrammar(): Promise<XgModule> {
  loaded ??= load();
  return loaded;
}

/** xgrammar's own words for its failure: the [FATAL] line it printed, without the C++ file position. */
export class XgrammarError extends Error {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
    this.name = 'XgrammarError';
  }
}

const stripPosition = (line: string, level: string) =>
  line.replace(new RegExp(`^\\[${level}\\]\\s*\\S+:\\d+:\\s*`), '');

/**
 * Runs an xgrammar call: its abort becomes an XgrammarError carrying the reason it printed, and what it warned about
 * (e.g. "Support for allOf with multiple options is still ongoing") comes back beside the value. Calls never
 * overlap: each is synchronous inside once the module has started (xgrammar() above).
 */
export async function xgCall<T>(call: () => Promise<T>): Promise<{ value: T; warnings: string[] }> {
  printed = [];
  try {
    const value = await call();
    const warnings = printed.filter((l) => l.includes('[WARNING]')).map((l) => stripPosition(l, 'WARNING'));
    return { value, warnings };
  } catch (cause) {
    const fatal = printed.find((line) => line.includes('[FATAL]')) ?? printed.find((l) => !l.startsWith('Aborted'));
    const reason = stripPosition(fatal ?? String(cause), 'FATAL').replace(/^Check failed: .*? is false: /, '');
    throw new XgrammarError(reason, { cause });
  } finally {
    printed = [];
  }
}

/** A matcher driven synchronously: the mask as a fresh Int32Array (bit i & 31 of word i >> 5: token i allowed). */
export class SyncMatcher {
  private constructor(
    private readonly native: NativeMatcher,
    private readonly view: (v: NativeIntVector) => Int32Array,
    readonly vocabSize: number,
  ) {}

  static async create(compiled: XgCompiledGrammar, vocabSize: number): Promise<SyncMatcher> {
    const xg = await xgrammar();
    const binding = xg.__chorusBinding();
    if (!binding) throw new Error('the xgrammar module has not started');
    const m = await xg.GrammarMatcher.createGrammarMatcher(compiled);
    return new SyncMatcher(m.handle, (v) => binding.vecIntToView(v), vocabSize);
  }

  /** Writes the allowed-token bitmask into `out` (ceil(vocabSize / 32) words). */
  fillMask(out: Int32Array): void {
    const vector = this.native.GetNextTokenBitmask(this.vocabSize);
    try {
      out.set(this.view(vector).subarray(0, out.length));
    } finally {
      vector.delete();
    }
  }

  /** False when the grammar does not allow the token (the matcher is then unchanged). */
  accept(tokenId: number): boolean {
    return this.native.AcceptToken(tokenId, false);
  }

  get terminated(): boolean {
    return this.native.IsTerminated();
  }

  rollBack(numTokens: number): void {
    this.native.Rollback(numTokens);
  }

  dispose(): void {
    this.native.delete();
  }
}
