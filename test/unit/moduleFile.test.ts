/**
 * Which file a helper thread starts (src/common/moduleFile.ts workerEntry) from the sources: the tsx boot file, or
 * under CHORUS_COMPILED=1 the built module in dist/ when there is one (the model and e2e tiers build it and open
 * dozens of redis connectors, each a thread: through tsx each booted on ~1.7x the CPU).
 */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { workerEntry } from '../../src/common/moduleFile.ts';

const ROOT = new URL('../../', import.meta.url);
const REDIS_IO = new URL('transport/redis/RedisIo.ts', ROOT).href;
const saved = process.env.CHORUS_COMPILED;

afterEach(() => {
  if (saved === undefined) delete process.env.CHORUS_COMPILED;
  else process.env.CHORUS_COMPILED = saved;
});

describe('workerEntry from the sources', () => {
  it('starts the tsx boot file unless CHORUS_COMPILED=1', () => {
    for (const value of [undefined, '0']) {
      if (value === undefined) delete process.env.CHORUS_COMPILED;
      else process.env.CHORUS_COMPILED = value;
      expect(workerEntry('./redisIoThreadBoot.mjs', './redisIoThread', REDIS_IO).href).toBe(
        new URL('transport/redis/redisIoThreadBoot.mjs', ROOT).href,
      );
    }
  });

  it('under CHORUS_COMPILED=1 starts the built module from dist/, and the boot file when dist/ lacks it', () => {
    process.env.CHORUS_COMPILED = '1';
    // No build of this name exists, whether or not dist/ was built.
    expect(workerEntry('./noSuchBoot.mjs', './noSuchThread', REDIS_IO).href).toBe(
      new URL('transport/redis/noSuchBoot.mjs', ROOT).href,
    );
    // The real thread: dist/'s build when this checkout has one (the tiers that set the variable build it first).
    const dist = new URL('dist/transport/redis/redisIoThread.js', ROOT);
    const boot = new URL('transport/redis/redisIoThreadBoot.mjs', ROOT);
    expect(workerEntry('./redisIoThreadBoot.mjs', './redisIoThread', REDIS_IO).href).toBe(
      (existsSync(dist) ? dist : boot).href,
    );
  });
});
