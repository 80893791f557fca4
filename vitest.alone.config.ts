import { defineConfig } from 'vitest/config';
import { ALONE, compiled, shared } from './vitest.config.ts';

/** The ALONE tests (vitest.config.ts), one file at a time after the main suite. */
export default defineConfig({
  test: { ...shared, ...compiled, maxWorkers: 2, include: ALONE, exclude: [], fileParallelism: false },
});
