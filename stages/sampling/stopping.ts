/**
 * Stop conditions, for the cores that own them (the runners only sample; the Thinker asks here). A stop token ends the
 * sequence without being emitted; max_tokens ends it after the token that reaches it.
 */
import type { SamplingParams } from '../../src/common/samplingParams.ts';

export type StopReason = 'stop' | 'length';

function isStopToken(tokenId: number, params: SamplingParams, eosTokenId: number): boolean {
  return (!params.ignoreEos && tokenId === eosTokenId) || params.stopTokenIds.includes(tokenId);
}

/** Why a sequence ends after sampling tokenId as its numGenerated-th token (1-based), or null to go on. */
export function stopReason(
  tokenId: number,
  numGenerated: number,
  params: SamplingParams,
  eosTokenId: number,
): StopReason | null {
  if (isStopToken(tokenId, params, eosTokenId)) return 'stop';
  if (numGenerated >= params.maxTokens) return 'length';
  return null;
}
