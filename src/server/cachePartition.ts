/**
 * Which cache partition a request's prompt lands in (docs/security.md#what-is-shared): the client's own `cache_salt`
 * (vLLM's field, on chat completions and on a Realtime session) and, when the operator partitions per API key (the
 * default when keys are configured: `security.cache_partition` in the config), the key the request came with. Two
 * requests share prefix-cache blocks and encoder outputs only when both agree; with neither, every request is in one
 * shared partition (the engine's GenerateRequest.cacheSalt absent).
 */
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { CachePartition } from '../common/graph.ts';

/** The field's schema (chat body, Realtime session): a non-empty string, as vLLM requires. */
export const CacheSaltField = Type.Optional(
  Type.String({ minLength: 1, maxLength: 1024, errorMessage: 'must be a non-empty string (at most 1024 characters)' }),
);

/**
 * The tenant a request belongs to: its API key's digest (neither the key nor its plain hash travels into the engine)
 * when caches are partitioned per key; null with no key, or with the partition `shared`.
 */
export function tenantOf(apiKey: string | null, partition: CachePartition | undefined): string | null {
  if (apiKey === null || partition === 'shared') return null;
  return createHash('sha256').update('chorus cache partition\0').update(apiKey).digest('base64url');
}

/**
 * The engine's cache salt: undefined (the shared partition) with neither a tenant nor a client salt; otherwise a
 * digest of both, so a client's salt can never spell another tenant's partition.
 */
export function cacheSaltOf(tenant: string | null, clientSalt: string | undefined): string | undefined {
  if (tenant === null && clientSalt === undefined) return undefined;
  return createHash('sha256')
    .update(JSON.stringify([tenant, clientSalt ?? null]))
    .digest('base64url');
}
