/**
 * `connectors:` -> ConnectorSpec per name, with each kind's options checked and defaulted. Option keys
 * become camelCase (ring_bytes -> ringBytes), the names the transport layer reads.
 */
import { defaults, parseByteSize } from './defaults.ts';
import type { Problems } from './problems.ts';
import { ConnectorOptionsYaml } from './schema.ts';
import type { ConnectorKind, ConnectorSpec } from './types.ts';
import { check } from './validate.ts';

const namePattern = /^[a-z0-9]+([-_][a-z0-9]+)*$/;

export function resolveConnectors(
  raw: Readonly<Record<string, { kind: ConnectorKind; options?: Record<string, unknown> }>> | undefined,
  problems: Problems,
): Record<string, ConnectorSpec> {
  if (raw === undefined) {
    return { [defaults.connectorName]: { name: defaults.connectorName, kind: 'shm', options: { ringBytes: defaults.shmRingBytes } } };
  }
  const out: Record<string, ConnectorSpec> = {};
  if (Object.keys(raw).length === 0) problems.add(['connectors'], 'must define at least one connector (or leave the section out for one shm connector)');
  for (const [name, spec] of Object.entries(raw)) {
    const at = ['connectors', name];
    if (!namePattern.test(name)) problems.add(at, `connector name "${name}" must be lowercase letters, digits, "-" or "_"`);
    const options = spec.options ?? {};
    // Listed even when its options are bad, so stage inputs naming it are not reported as unknown too.
    const valid = check(ConnectorOptionsYaml[spec.kind], options, [...at, 'options'], problems);
    out[name] = { name, kind: spec.kind, options: valid ? resolveOptions(spec.kind, options) : {} };
  }
  return out;
}

function resolveOptions(kind: ConnectorKind, options: Record<string, unknown>): Record<string, unknown> {
  switch (kind) {
    case 'shm':
      return { ringBytes: parseByteSize((options.ring_bytes as number | string | undefined) ?? defaults.shmRingBytes) };
    case 'inproc':
      return {};
    case 'redis': {
      const redis: Record<string, unknown> = {
        url: options.url ?? defaults.redis.url,
        ttlSeconds: options.ttl_seconds ?? defaults.redis.ttlSeconds,
        poolSize: options.pool_size ?? defaults.redis.poolSize,
        keyPrefix: options.key_prefix ?? defaults.redis.keyPrefix,
      };
      if (options.password !== undefined) redis.password = options.password;
      return redis;
    }
  }
}
