/**
 * Reads the KV-cache part of a decoder signature from session metadata and refuses files that do not follow
 * it, naming what is missing and how to export it properly. Two signatures (decoderStack.ts):
 *  - Optimum: past_key_values.N.key|value [B, H, past, Dh] -> present.N.key|value [B, H, past+S, Dh];
 *  - append-only (what Chorus generates): cache.N.key|value [past, B, H, Dh] -> cache_new.N.key|value
 *    [S, B, H, Dh].
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

const SIGNATURES = {
  optimum: {
    past: 'past_key_values.',
    present: 'present.',
    headsAxis: 1,
    headDimAxis: 3,
    shape: '[batch, heads, past, head_dim]',
  },
  append: {
    past: 'cache.',
    present: 'cache_new.',
    headsAxis: 2,
    headDimAxis: 3,
    shape: '[past, batch, heads, head_dim]',
  },
} as const;

export function readKvSignature(session: SyncSession, what: string): KvSignature {
  const cacheLayout = layersOf(session.inputMetadata, SIGNATURES.append.past).length > 0 ? 'append' : 'optimum';
  const sig = SIGNATURES[cacheLayout];
  const pastLayers = layersOf(session.inputMetadata, sig.past);
  const presentLayers = layersOf(session.outputMetadata, sig.present);
  if (presentLayers.length === 0) {
    throw signatureError(what, `has no ${sig.present}* outputs: export it with use_cache=True`);
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
  const key0 = session.inputMetadata.find((m) => m.name === `${sig.past}0.key`)!;
  if (key0.type !== 'float32') {
    throw signatureError(what, `keeps its KV cache in ${key0.type}: export it in float32`);
  }
  const numKvHeads = key0.shape[sig.headsAxis];
  const headDim = key0.shape[sig.headDimAxis];
  if (key0.shape.length !== 4 || typeof numKvHeads !== 'number' || typeof headDim !== 'number') {
    throw signatureError(
      what,
      `has ${key0.name} of shape [${key0.shape.join(', ')}]: expected ${sig.shape} with fixed heads and head_dim`,
    );
  }
  const past: string[] = [];
  const present: string[] = [];
  for (let l = 0; l < numLayers; l++) {
    for (const which of ['key', 'value']) {
      past.push(`${sig.past}${l}.${which}`);
      present.push(`${sig.present}${l}.${which}`);
    }
  }
  const inputNames = new Set(session.inputNames);
  return {
    layout: { numLayers, numKvHeads, headDim },
    names: {
      cacheLayout,
      past,
      present,
      hasPositionIds: inputNames.has('position_ids'),
      hasUseCacheBranch: inputNames.has('use_cache_branch'),
    },
  };
}

/** Inputs the runner does not know how to feed: refuse them up front rather than fail on the first request. */
export function checkNoUnknownInputs(session: SyncSession, what: string, known: ReadonlySet<string>): void {
  const isCache = (n: string) => Object.values(SIGNATURES).some((sig) => n.startsWith(sig.past));
  const unknown = session.inputNames.filter((n) => !known.has(n) && !isCache(n));
  if (unknown.length > 0) throw signatureError(what, `has inputs Chorus cannot feed: ${unknown.join(', ')}`);
}
