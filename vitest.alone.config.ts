import { defineConfig } from 'vitest/config';
import { ALONE, shared } from './vitest.config.ts';

/** The ALONE tests (vitest.config.ts), one file at a time after the main suite. */
export default defineConfig({
  test: { ...shared, maxWorkers: 2, include: ALONE, exclude: [], fileParallelism: false },
});
