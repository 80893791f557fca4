/**
 * Main's check of a request's grammar before it is admitted: every schema keyword is one the grammar enforces
 * (schemaKeywords.ts), and xgrammar turns the schema or structural tag into a grammar without complaint. So the
 * Thinker's compile of it cannot fail on the request's account, and the client gets a 400 that names the problem.
 * No tokenizer is needed here: this is the grammar, not its token masks (the Thinker compiles those).
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { GrammarSpec } from '../common/engine.ts';
import { UnsupportedSchemaError, checkSchemaKeywords } from './schemaKeywords.ts';
import { XgrammarError, xgCall, xgrammar } from './xgrammar.ts';
import { JSON_LAYOUT } from './GrammarEngine.ts';
import { boundIntegers } from './safeIntegers.ts';

/** Where the spec came from in the request, for the error (e.g. response_format.json_schema.schema). */
export async function checkGrammar(spec: GrammarSpec, at: string): Promise<void> {
  if (spec.type === 'json_object') return;
  const xg = await xgrammar();
  try {
    const { value, warnings } = await xgCall(() =>
      spec.type === 'json_schema'
        ? xg.Grammar.fromJSONSchema(spec.schema, JSON_LAYOUT.anyWhitespace, JSON_LAYOUT.indent)
        : xg.Grammar.fromStructuralTag(spec.tag),
    );
    value.dispose();
    if (warnings.length > 0) {
      throw new UnsupportedSchemaError(
        '',
        at,
        `${at}: ${warnings[0]}; constrained decoding would not enforce that part of the schema: rewrite it ` +
          '(allOf with several subschemas: merge them into one)',
      );
    }
  } catch (err) {
    if (!(err instanceof XgrammarError)) throw err;
    throw new ChorusError(ErrorCodes.GRAMMAR_INVALID, `${at}: the grammar engine refused the schema: ${err.reason}`, {
      cause: err,
    });
  }
}

/** A JSON schema (parsed) as the grammar spec of a json_schema answer, its keywords checked, integers bounded. */
export function jsonSchemaSpec(schema: unknown, at: string): GrammarSpec {
  checkSchemaKeywords(schema, at);
  return { type: 'json_schema', schema: JSON.stringify(boundIntegers(schema)) };
}
