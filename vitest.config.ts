import { defineConfig } from 'vitest/config';

/**
 * Tests that measure the machine (the event loop under 16 voice sessions) or load it end to end for a minute (the
 * soak): `npm test` runs them after the main suite, one file at a time (vitest.alone.config.ts), so neither
 * measures nor starves another test file.
 */
export const ALONE = ['test/e2e/voiceLoad.test.ts', 'test/e2e/soak.test.ts'];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...ALONE, '**/node_modules/**'],
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
