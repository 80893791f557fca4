/**
 * The tokenizer for a Thinker's model spec: a file model with a tokenizer folder gets its Hugging Face
 * tokenizer; a generated model (or a file model without one) gets the ByteTokenizer its vocabulary was
 * laid out for. Synchronous (it reads two small JSON files once, at stage or engine start-up).
 */
import type { ModelSpec } from '../common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { ByteTokenizer } from './ByteTokenizer.ts';
import { HfTokenizer } from './HfTokenizer.ts';
import type { Tokenizer } from './Tokenizer.ts';

/**
 * `size` gives the vocabulary of a file model without a tokenizer folder (read from the ONNX logits):
 * a number, or any size object with vocabSize (a ThinkerSize).
 */
export function createTokenizer(spec: ModelSpec, size?: number | { readonly vocabSize: number }): Tokenizer {
  if (spec.source === 'generated') {
    if (spec.kind !== 'thinker') {
      throw new ChorusError(
        ErrorCodes.TOKENIZER,
        `a generated ${spec.kind} has no tokenizer; only the thinker's model spec does`,
      );
    }
    return new ByteTokenizer(spec.size.vocabSize);
  }
  if (spec.tokenizer !== undefined) return HfTokenizer.fromDir(spec.tokenizer);
  if (size === undefined) {
    throw new ChorusError(
      ErrorCodes.TOKENIZER,
      `${spec.path} has no tokenizer folder: set model.tokenizer, or pass the vocabulary size for the byte tokenizer`,
    );
  }
  return new ByteTokenizer(typeof size === 'number' ? size : size.vocabSize);
}
