/** What callers above the transport ask the connector registry instead of spelling a kind's name. */
import { describe, expect, it } from 'vitest';
import type { ConnectorSpec } from '../../src/common/graph.ts';
import { allConnectorKinds, crossesHosts, redisOptionsOf } from '../../transport/registry.ts';

const spec = (kind: ConnectorSpec['kind'], options: Record<string, unknown>): ConnectorSpec => ({
  name: `${kind}-link`,
  kind,
  options,
});

describe('the connector registry', () => {
  it('says which kinds cross hosts: redis does, shm and inproc do not, an unknown name does not', () => {
    expect(crossesHosts('redis')).toBe(true);
    expect(crossesHosts('shm')).toBe(false);
    expect(crossesHosts('inproc')).toBe(false);
    expect(crossesHosts('tcp')).toBe(false);
    expect(crossesHosts('constructor')).toBe(false);
    expect(crossesHosts(undefined)).toBe(false);
  });

  it('declares crossesHosts on every built kind', () => {
    for (const [name, entry] of Object.entries(allConnectorKinds))
      expect(typeof entry.crossesHosts, `kind ${name}`).toBe('boolean');
  });

  it('gives the Redis a connector reaches, and null for one of another kind', () => {
    const options = { url: 'redis://127.0.0.1:6399', keyPrefix: 'chorus', ttlSeconds: 60 };
    expect(redisOptionsOf(spec('redis', options))).toBe(options);
    expect(redisOptionsOf(spec('shm', { ringBytes: 1024 }))).toBeNull();
    expect(redisOptionsOf(undefined)).toBeNull();
  });
});
