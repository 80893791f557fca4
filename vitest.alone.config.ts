import { defineConfig } from 'vitest/config';
import base, { ALONE } from './vitest.config.ts';

/** The ALONE tests (vitest.config.ts), one file at a time after the main suite. */
export default defineConfig({ test: { ...base.test, include: ALONE, exclude: [], fileParallelism: false } });
