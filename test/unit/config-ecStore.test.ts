/** `ec_store:` in the stage graph: off without it, Redis from the connector or its own url, line-precise errors. */
import { configProblems } from '../helpers/configProblems.ts';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';

const stages = `stages:
  - stage_id: image-encoder
    kind: encoder
    encoder: {modality: image}
  - stage_id: thinker
    kind: thinker
    inputs: [{from: image-encoder}]
    final_output: true
    final_output_type: text
`;
const redisConnector = `connectors:
  redis: {kind: redis, options: {url: "redis://:pw@10.0.0.1:6379", key_prefix: dep1}}
`;

function load(yaml: string) {
  return parseConfig(yaml, 'configs/x.yaml', { cores: 64 });
}

const problemsOf = (yaml: string) => configProblems(yaml);

describe('ec_store', () => {
  it('is off without the section', () => {
    expect(load(stages).ecStore).toBeNull();
  });

  it('keeps rows in-process without Redis, with its budget and TTL', () => {
    const g = load(`ec_store: {budget_bytes: 8MiB, ttl_seconds: 30}\n${stages}`);
    expect(g.ecStore).toEqual({ budgetBytes: 8 * 1024 * 1024, ttlMs: 30_000, redis: null });
    expect(load(`ec_store: {}\n${stages}`).ecStore).toEqual({
      budgetBytes: 256 * 1024 * 1024,
      ttlMs: 600_000,
      redis: null,
    });
  });

  it("shares the redis connector's url, credentials and key prefix; url: null opts out", () => {
    const saved = process.env.CHORUS_REDIS_URL;
    delete process.env.CHORUS_REDIS_URL;
    try {
      expect(load(`${redisConnector}ec_store: {}\n${stages}`).ecStore?.redis).toEqual({
        url: 'redis://:pw@10.0.0.1:6379',
        keyPrefix: 'dep1',
      });
      expect(load(`${redisConnector}ec_store: {url: null}\n${stages}`).ecStore?.redis).toBeNull();
      expect(load(`ec_store: {url: "rediss://10.0.0.2:6380", password: s3cret}\n${stages}`).ecStore?.redis).toEqual({
        url: 'rediss://10.0.0.2:6380',
        password: 's3cret',
        keyPrefix: 'chorus',
      });
    } finally {
      if (saved !== undefined) process.env.CHORUS_REDIS_URL = saved;
    }
  });

  it('refuses bad knobs with file:line and the path', () => {
    expect(
      problemsOf(`ec_store:
  budget_bytes: lots
  ttl_seconds: 0
  url: "http://x"
  eviction: lru
${stages}`),
    ).toEqual([
      'configs/x.yaml:2 ec_store.budget_bytes: must be a byte count: a positive integer or a string like "64MiB" ' +
        '(B, KiB, MiB, GiB, KB, MB, GB), got "lots"',
      'configs/x.yaml:3 ec_store.ttl_seconds: must be an integer >= 1, got 0',
      'configs/x.yaml:4 ec_store.url: must be a redis:// or rediss:// URL of one node, or null to keep the rows ' +
        'in-process only, got "http://x"',
      'configs/x.yaml:5 ec_store.eviction: unknown key "eviction" (allowed here: budget_bytes, ttl_seconds, url, ' +
        'username, password, key_prefix)',
    ]);
    expect(problemsOf(`ec_store:\n  password: pw\n${stages}`)).toEqual([
      'configs/x.yaml:2 ec_store.password: has no effect: the store keeps its rows in-process (no url and no redis ' +
        'connector); give ec_store a url, or remove it',
    ]);
  });

  it('refuses a Cluster connector as its Redis, and warns when there are no encoders', () => {
    const saved = process.env.CHORUS_REDIS_URL;
    delete process.env.CHORUS_REDIS_URL;
    try {
      const cluster = `connectors:\n  redis: {kind: redis, options: {url: "redis+cluster://a:1,b:2"}}\n`;
      expect(problemsOf(`${cluster}ec_store: {}\n${stages}`)).toEqual([
        'configs/x.yaml:3 ec_store: takes its Redis from connector "redis", whose url is a Cluster ' +
          '(redis+cluster://): the store needs one node; set ec_store.url to a redis:// or rediss:// URL (or url: ' +
          'null for in-process only)',
      ]);
    } finally {
      if (saved !== undefined) process.env.CHORUS_REDIS_URL = saved;
    }
    const textOnly = `ec_store: {}
stages:
  - stage_id: thinker
    kind: thinker
    final_output: true
    final_output_type: text
`;
    expect(load(textOnly).warnings).toEqual([
      'configs/x.yaml:1 ec_store: the graph has no encoder stages: there is nothing for the encoder-output store to ' +
        'keep',
    ]);
  });
});
