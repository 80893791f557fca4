/**
 * The Talker's file layout (ours; there is no public convention to follow): talker.onnx with
 * condition / prev_codes / KV inputs and logits / last_hidden_state outputs, plus code_predictor.onnx (logits,
 * and optionally greedy_codes: the argmax of each codebook, fetched instead of the logits by greedy steps) and
 * pad_row.f32 beside it. A generated folder copied elsewhere loads as a bring-your-own model.
 */
import { basename } from 'node:path';
import { checkNoUnknownInputs, readKvSignature, signatureError, type KvSignature } from '../models/decoderSignature.ts';
import type { SyncSession } from '../models/SyncSession.ts';

export interface TalkerSignature extends KvSignature {
  readonly conditionDim: number;
  readonly numCodebooks: number;
  /** Codebook-0 vocabulary: codebookSize codes + BOS + EOS. */
  readonly codebookSize: number;
  readonly hiddenSize: number;
  /** The code predictor also outputs greedy_codes [batch, numCodebooks - 1] (int64): each codebook's argmax. */
  readonly greedyCodes: boolean;
}

const KNOWN_INPUTS = new Set(['condition', 'prev_codes', 'attention_mask', 'position_ids', 'use_cache_branch']);

export function readTalkerSignature(talker: SyncSession, predictor: SyncSession, path: string): TalkerSignature {
  const what = `talker model ${basename(path)}`;
  const kv = readKvSignature(talker, what);
  checkNoUnknownInputs(talker, what, KNOWN_INPUTS);
  const input = (name: string) => talker.inputMetadata.find((m) => m.name === name);
  const output = (name: string) => talker.outputMetadata.find((m) => m.name === name);
  const condition = input('condition')?.shape[2];
  const numCodebooks = input('prev_codes')?.shape[2];
  const vocab = output('logits')?.shape[2];
  const hiddenSize = output('last_hidden_state')?.shape[2];
  if (typeof condition !== 'number')
    throw signatureError(what, 'needs a condition input [batch, seq, conditionDim] with a fixed conditionDim');
  if (typeof numCodebooks !== 'number')
    throw signatureError(what, 'needs a prev_codes input [batch, seq, numCodebooks] (int64)');
  if (typeof vocab !== 'number' || vocab < 3)
    throw signatureError(what, 'needs a logits output [batch, seq, codebookSize + 2] (codes, BOS, EOS)');
  if (typeof hiddenSize !== 'number')
    throw signatureError(what, 'needs a last_hidden_state output [batch, seq, hidden] for the code predictor');

  const pwhat = `code predictor ${basename(predictor.label)}`;
  const pHidden = predictor.inputMetadata.find((m) => m.name === 'hidden')?.shape[1];
  const pLogits = predictor.outputMetadata.find((m) => m.name === 'logits')?.shape;
  if (pHidden !== hiddenSize || !predictor.inputNames.includes('code0')) {
    throw signatureError(pwhat, `needs inputs hidden [batch, ${hiddenSize}] and code0 [batch] (int64)`);
  }
  if (!pLogits || pLogits[1] !== numCodebooks - 1 || pLogits[2] !== vocab - 2) {
    throw signatureError(pwhat, `needs a logits output [batch, ${numCodebooks - 1}, ${vocab - 2}]`);
  }
  const greedy = predictor.outputMetadata.find((m) => m.name === 'greedy_codes');
  const greedyCodes = greedy !== undefined && greedy.type === 'int64' && greedy.shape[1] === numCodebooks - 1;
  if (greedy && !greedyCodes) throw signatureError(pwhat, `greedy_codes must be int64 [batch, ${numCodebooks - 1}]`);
  return { ...kv, conditionDim: condition, numCodebooks, codebookSize: vocab - 2, hiddenSize, greedyCodes };
}
