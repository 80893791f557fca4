/**
 * Reads the KV-cache part of an Optimum-style decoder signature from session metadata and refuses files
 * that do not follow it, naming what is missing and how to export it properly.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { KvNames } from './KvDecoder.ts';
import type { KvLayout } from './SeqKvCache.ts';
import type { SyncSession, ValueMetadata } from './SyncSession.ts';

export interface KvSignature {
  readonly layout: KvLayout;
  readonly names: KvNames;
}

export function signatureError(what: string, problem: string): ChorusError {
  return new ChorusError(ErrorCodes.MODEL_SIGNATURE, `${what} ${problem}`);
}

/** Layer numbers of names like `${prefix}${n}.key` / `.value`, checked to be 0..L-1 with both halves. */
function layersOf(meta: readonly ValueMetadata[], prefix: string): number[] {
  const found = new Map<number, Set<string>>();
  for (const m of meta) {
    const match = m.name.startsWith(prefix) ? /^(\d+)\.(key|value)$/.exec(m.name.slice(prefix.length)) : null;
    if (!match) continue;
    const layer = Number(match[1]);
    if (!found.has(layer)) found.set(layer, new Set());
    found.get(layer)!.add(match[2]);
  }
  return [...found.entries()]
    .filter(([, halves]) => halves.size === 2)
    .map(([l]) => l)
    .sort((a, b) => a - b);
}

export function readKvSignature(session: SyncSession, what: string): KvSignature {
  const pastLayers = layersOf(session.inputMetadata, 'past_key_values.');
  const presentLayers = layersOf(session.outputMetadata, 'present.');
  if (presentLayers.length === 0) {
    throw signatureError(what, 'has no present.* outputs: export it with use_cache=True');
  }
  if (pastLayers.length === 0) {
    throw signatureError(
      what,
      'has present.* outputs but no past_key_values.* inputs: it is the first-step half of a split export; use ' +
        'decoder_with_past_model.onnx or decoder_model_merged.onnx',
    );
  }
  const numLayers = pastLayers.length;
  if (
    pastLayers.some((l, i) => l !== i) ||
    presentLayers.length !== numLayers ||
    presentLayers.some((l, i) => l !== i)
  ) {
    throw signatureError(
      what,
      `has past layers [${pastLayers.join(',')}] and present layers [${presentLayers.join(',')}]: both must be ` +
        `0..N-1, each with .key and .value`,
    );
  }
  if (!session.inputMetadata.some((m) => m.name === 'attention_mask')) {
    throw signatureError(what, 'has no attention_mask input: batching sequences of different lengths needs it');
  }
  const key0 = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key')!;
  if (key0.type !== 'float32') {
    throw signatureError(what, `keeps its KV cache in ${key0.type}: export it in float32`);
  }
  const [, numKvHeads, , headDim] = key0.shape;
  if (key0.shape.length !== 4 || typeof numKvHeads !== 'number' || typeof headDim !== 'number') {
    throw signatureError(
      what,
      `has past_key_values.0.key of shape [${key0.shape.join(', ')}]: expected [batch, heads, past, head_dim] with ` +
        `fixed heads and head_dim`,
    );
  }
  const past: string[] = [];
  const present: string[] = [];
  for (let l = 0; l < numLayers; l++) {
    for (const which of ['key', 'value']) {
      past.push(`past_key_values.${l}.${which}`);
      present.push(`present.${l}.${which}`);
    }
  }
  const inputNames = new Set(session.inputNames);
  return {
    layout: { numLayers, numKvHeads, headDim },
    names: {
      past,
      present,
      hasPositionIds: inputNames.has('position_ids'),
      hasUseCacheBranch: inputNames.has('use_cache_branch'),
    },
  };
}

/** Inputs the runner does not know how to feed: refuse them up front rather than fail on the first request. */
export function checkNoUnknownInputs(session: SyncSession, what: string, known: ReadonlySet<string>): void {
  const unknown = session.inputNames.filter((n) => !known.has(n) && !n.startsWith('past_key_values.'));
  if (unknown.length > 0) throw signatureError(what, `has inputs Chorus cannot feed: ${unknown.join(', ')}`);
}
