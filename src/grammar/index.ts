export { checkGrammar, jsonSchemaSpec } from './checkGrammar.ts';
export { GrammarEngine, grammarKey, JSON_LAYOUT, type GrammarStats } from './GrammarEngine.ts';
export { RequestGrammar, allowedBy } from './RequestGrammar.ts';
export {
  grammarVocabOf,
  byteTokenizerVocab,
  hfTokenizerVocab,
  toByteLevel,
  type GrammarVocab,
} from './grammarVocab.ts';
export { checkSchemaKeywords, UnsupportedSchemaError, ENFORCED_FORMATS } from './schemaKeywords.ts';
export { boundIntegers } from './safeIntegers.ts';
