/**
 * What a Thinker ONNX file offers, read from session metadata. Our generated decoder takes inputs_embeds
 * and outputs hidden_states.accept; a plain Optimum text decoder takes input_ids and has no hidden states.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { checkNoUnknownInputs, readKvSignature, signatureError, type KvSignature } from '../models/decoderSignature.ts';
import type { SyncSession } from '../models/SyncSession.ts';
import { THINKER_ACCEPT_OUTPUT } from './thinkerModel.ts';

export interface ThinkerSignature extends KvSignature {
  readonly inputMode: 'inputs_embeds' | 'input_ids';
  readonly vocabSize: number;
  /** From inputs_embeds or the hidden output when fixed; null when the file does not say. */
  readonly hiddenSize: number | null;
  readonly hiddenOutput: string | null;
}

const KNOWN_INPUTS = new Set(['inputs_embeds', 'input_ids', 'attention_mask', 'position_ids', 'use_cache_branch']);

export function readThinkerSignature(session: SyncSession, path: string): ThinkerSignature {
  const what = `thinker model ${basename(path)}`;
  const kv = readKvSignature(session, what);
  checkNoUnknownInputs(session, what, KNOWN_INPUTS);
  const logits = session.outputMetadata.find((m) => m.name === 'logits');
  if (!logits) throw signatureError(what, 'has no logits output');
  const vocabSize = logits.shape[2];
  if (typeof vocabSize !== 'number')
    throw signatureError(
      what,
      `has logits of shape [${logits.shape.join(', ')}]: the vocabulary size (last axis) must be fixed`,
    );
  const embedsInput = session.inputMetadata.find((m) => m.name === 'inputs_embeds');
  const idsInput = session.inputMetadata.find((m) => m.name === 'input_ids');
  if (!embedsInput && !idsInput) throw signatureError(what, 'has neither an inputs_embeds nor an input_ids input');
  const hidden = session.outputMetadata.find((m) => m.name === THINKER_ACCEPT_OUTPUT);
  const fixed = (d: number | string | undefined): number | null => (typeof d === 'number' ? d : null);
  return {
    ...kv,
    inputMode: embedsInput ? 'inputs_embeds' : 'input_ids',
    vocabSize,
    hiddenSize: fixed(embedsInput?.shape[2]) ?? fixed(hidden?.shape[2]),
    hiddenOutput: hidden ? hidden.name : null,
  };
}

/**
 * eos_token_id and max_position_embeddings from a Hugging Face config.json / generation_config.json beside the file.
 */
export function readSiblingConfig(path: string): { eosTokenId: number | null; maxPositions: number | null } {
  let eosTokenId: number | null = null;
  let maxPositions: number | null = null;
  for (const name of ['generation_config.json', 'config.json']) {
    const file = join(dirname(path), name);
    if (!existsSync(file)) continue;
    try {
      const json = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      const eos = json.eos_token_id;
      if (eosTokenId === null && typeof eos === 'number') eosTokenId = eos;
      if (eosTokenId === null && Array.isArray(eos) && typeof eos[0] === 'number') eosTokenId = eos[0];
      if (maxPositions === null && typeof json.max_position_embeddings === 'number')
        maxPositions = json.max_position_embeddings;
    } catch {
      // A malformed side file only loses the defaults it would have given.
    }
  }
  return { eosTokenId, maxPositions };
}
