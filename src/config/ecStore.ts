/**
 * `ec_store:` -> EcStoreSettings. Present means on. Its rows go to Redis when it names a `url`, or else when the
 * deployment has a redis connector (whose url, credentials and key_prefix it shares); `url: null`, or no Redis at
 * all, keeps them in the Thinker processes only, indexed by main.
 */
import type { ConnectorSpec, EcStoreSettings } from '../common/graph.ts';
import type { Static } from '@sinclair/typebox';
import type { EcStoreYaml } from './schema.ts';
import { defaults, parseByteSize } from './defaults.ts';
import type { Problems } from './problems.ts';
import { redisOptionsOf } from '../../transport/registry.ts';

export function resolveEcStore(
  raw: Static<typeof EcStoreYaml> | undefined,
  connectors: Readonly<Record<string, ConnectorSpec>>,
  numEncoderStages: number,
  problems: Problems,
): EcStoreSettings | null {
  if (raw === undefined) return null;
  const at = ['ec_store'];
  if (numEncoderStages === 0)
    problems.warn(at, 'the graph has no encoder stages: there is nothing for the encoder-output store to keep');
  const settings = {
    budgetBytes: parseByteSize(raw.budget_bytes ?? defaults.ecStore.budgetBytes),
    ttlMs: (raw.ttl_seconds ?? defaults.ecStore.ttlSeconds) * 1000,
  };
  const connector = Object.values(connectors).find((c) => redisOptionsOf(c) !== null);
  if (raw.url === null || (raw.url === undefined && !connector)) {
    const why = raw.url === null ? 'url: null' : 'no url and no redis connector';
    for (const key of ['username', 'password', 'key_prefix'] as const) {
      if (raw[key] === undefined) continue;
      problems.add(
        [...at, key],
        `has no effect: the store keeps its rows in-process (${why}); give ec_store a url, or remove it`,
      );
    }
    return { ...settings, redis: null };
  }
  if (raw.url !== undefined) {
    return {
      ...settings,
      redis: {
        url: raw.url,
        ...(raw.username !== undefined ? { username: raw.username } : {}),
        ...(raw.password !== undefined ? { password: raw.password } : {}),
        keyPrefix: raw.key_prefix ?? defaults.ecStore.keyPrefix,
      },
    };
  }
  const o = redisOptionsOf(connector)!;
  if (!/^rediss?:\/\//.test(o.url)) {
    problems.add(
      at,
      `takes its Redis from connector "${connector!.name}", whose url is a Cluster (${o.url.split('://')[0]}://): ` +
        'the store needs one node; set ec_store.url to a redis:// or rediss:// URL (or url: null for in-process only)',
    );
    return null;
  }
  return {
    ...settings,
    redis: {
      url: o.url,
      ...((raw.username ?? o.username) !== undefined ? { username: raw.username ?? o.username } : {}),
      ...((raw.password ?? o.password) !== undefined ? { password: raw.password ?? o.password } : {}),
      keyPrefix: raw.key_prefix ?? o.keyPrefix,
    },
  };
}
