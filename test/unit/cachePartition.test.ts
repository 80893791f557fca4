/**
 * Which partition a request's cache lands in (src/server/cachePartition.ts): the tenant of its API key unless the
 * config shares caches across keys, folded with the client's cache_salt; neither is the shared default. And the
 * config's security.cache_partition, with its default and its refusal of what it does not know.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { cacheSaltOf, tenantOf } from '../../src/server/cachePartition.ts';
import { resolveServerOptions } from '../../src/server/options.ts';

const stages = `
stages:
  - stage_id: thinker
    kind: thinker
    final_output: true
    final_output_type: text
`;

describe('cache partition', () => {
  it('a key is a tenant unless the partition is shared; no key, no tenant', () => {
    expect(tenantOf(null, 'api_key')).toBeNull();
    expect(tenantOf('k1', 'shared')).toBeNull();
    expect(tenantOf('k1', 'api_key')).toBe(tenantOf('k1', undefined)); // api_key is the default
    expect(tenantOf('k1', 'api_key')).not.toBe(tenantOf('k2', 'api_key'));
    expect(tenantOf('k1', 'api_key')).not.toContain('k1');
  });

  it("the engine's salt: none without tenant and salt; each pair its own; a client salt never spells a tenant", () => {
    expect(cacheSaltOf(null, undefined)).toBeUndefined();
    const t = tenantOf('k1', 'api_key');
    const salts = [cacheSaltOf(t, undefined), cacheSaltOf(t, 'a'), cacheSaltOf(null, 'a'), cacheSaltOf(t, 'b')];
    expect(new Set(salts).size).toBe(4);
    expect(cacheSaltOf(t, 'a')).toBe(cacheSaltOf(tenantOf('k1', 'api_key'), 'a'));
    expect(cacheSaltOf(null, t!)).not.toBe(cacheSaltOf(t, undefined));
  });

  it('API keys: one or several (--api-key repeated), duplicates once, an empty key none', () => {
    expect(resolveServerOptions({ apiKey: ['a', 'b', 'a', ''] }, 'm').apiKeys).toEqual(['a', 'b']);
    expect(resolveServerOptions({ apiKey: 'k' }, 'm').apiKeys).toEqual(['k']);
    expect(resolveServerOptions({ apiKey: '' }, 'm').apiKeys).toEqual([]);
    expect(resolveServerOptions({ apiKey: null }, 'm').apiKeys).toEqual([]);
  });

  it('security.cache_partition: api_key by default, shared when asked, anything else refused by path', () => {
    expect(parseConfig(stages, 'c.yaml').cachePartition).toBe('api_key');
    expect(parseConfig(`security: {cache_partition: shared}\n${stages}`, 'c.yaml').cachePartition).toBe('shared');
    expect(() => parseConfig(`security: {cache_partition: per_user}\n${stages}`, 'c.yaml')).toThrow(
      /security\.cache_partition/,
    );
  });
});
