import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/globalTempCheck.ts'],
    // onnxruntime-node and the native addon need real processes: vm pools break typed arrays.
    pool: 'forks',
    // test/e2e/memory.test.ts measures live memory: it collects garbage before each sample.
    execArgv: ['--expose-gc'],
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { CHORUS_LOG_LEVEL: process.env.CHORUS_LOG_LEVEL ?? 'silent' },
  },
});
