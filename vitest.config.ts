import { defineConfig } from 'vitest/config';

/**
 * Tests that measure the machine (the event loop under 16 voice sessions; admission held to what one warm request
 * took, whose refusals must be the latency gate's and not the running limit learned from late first packets; main's
 * loop and system CPU while decoders start, with and without a 1.5 GB main: 4-13 s in the unit tier beside the
 * build, its 20 s bound too near on a slower host) or load it end to end for a minute (the soak): `npm test` runs
 * them after the main suite, one file at a time (vitest.alone.config.ts), so neither measures nor starves another
 * test file.
 */
export const ALONE = [
  'test/e2e/voiceLoad.test.ts',
  'test/e2e/soak.test.ts',
  'test/e2e/soak.turns.test.ts',
  'test/e2e/server.admissionSlo.test.ts',
  'test/native/wakePlacement.test.ts',
  'test/unit/decoderSpawner.test.ts',
];

/** What every tier shares (and the ALONE run: vitest.alone.config.ts). */
export const shared = {
  exclude: [...ALONE, '**/node_modules/**'],
  globalSetup: ['test/globalTempCheck.ts'],
  // onnxruntime-node and the native addon need real processes: vm pools break typed arrays.
  pool: 'forks' as const,
  // test/e2e/memory.test.ts measures live memory: it collects garbage before each sample.
  execArgv: ['--expose-gc'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  env: { CHORUS_LOG_LEVEL: process.env.CHORUS_LOG_LEVEL ?? 'silent' },
};

/**
 * The tiers that start `chorus` as a command, stage processes or helper threads run them compiled (test/buildDist.ts
 * builds dist/ first): a deployment boots on half the CPU it takes through tsx.
 */
export const compiled = {
  globalSetup: [...shared.globalSetup, 'test/buildDist.ts'],
  env: { ...shared.env, CHORUS_COMPILED: '1' },
};

/**
 * The suite's tiers, run in this order by test/runTiers.ts (each timed): pure unit tests first, with a short
 * timeout (none of them waits on a process or a model: a slow one is a bug), then models and transports in real
 * processes, then real servers end to end, then the browser. `vitest run --project e2e` runs one tier.
 * The unit files share their worker's modules (isolate: false): importing the sources anew for each of ~120 files
 * was 80% of the tier's time. So a unit test leaves no module state behind (a test kind it registered is taken
 * back: stages/registry.ts unregisterStageKind; fake timers are restored).
 */
export const TIERS = {
  unit: { include: ['test/unit/**/*.test.ts'], testTimeout: 20_000, isolate: false },
  // Compiled too: the transport tests open dozens of redis connectors, each an I/O thread that booted on ~40% less CPU
  // from dist/ than through tsx (src/common/moduleFile.ts workerEntry); the e2e tier's build is then a no-op.
  model: {
    include: ['test/model/**/*.test.ts', 'test/native/**/*.test.ts', 'test/transport/**/*.test.ts'],
    ...compiled,
  },
  // The e2e files share their worker's modules too (isolate: false), two files at a time. On 10 of its files
  // (bench/NOTES.md, "Suite time: the e2e tier's isolate and workers") that ran them in 0.42-0.47x the time (imports
  // 71-108 s -> 22-25 s); the whole tier ran 608 s (imports 24.5 s) where CI's last run with a process per file took
  // 806 s (imports 230 s). What a shared worker exposed was fixed at its cause: a restart booting past its engine's
  // close left the stage running (StagePool), main's tracing settled once per process (tracing.test builds its own),
  // counts read from the process's registry from zero (kvHeldSkip, server.metrics: from their start). So an e2e file,
  // like a unit file, leaves nothing behind: its servers closed, its env restored, its counts taken as differences.
  // Three files at a time: two left a core idle much of the time, the files waiting on boots, leases, restarts and
  // real-time audio (the tier 832 CPU-s against 1440 core-s of its 720 s). The whole tier, one run after the other:
  // 533 s with three workers against 720 s with two (bench/NOTES.md, "Suite time: the build beside the unit tier, the
  // pack's check, a third e2e worker"), the files that assert on latency (memory, server.overload, schedIdle,
  // ttfpTarget, server.longPrompt) passing beside two others; server.admissionSlo went to ALONE.
  e2e: { include: ['test/e2e/**/*.test.ts', 'test/voice/**/*.test.ts'], ...compiled, isolate: false, maxWorkers: 3 },
  // One file at a time: the voice page runs a real pipeline, and beside it the playground page's event loop stalled
  // past its 50 ms playback lead, which the playground test counts (rightly) as an underrun.
  browser: { include: ['test/browser/**/*.test.ts'], fileParallelism: false },
};

export default defineConfig({
  test: {
    ...shared,
    maxWorkers: 2,
    // A project's include replaces nothing that `extends` would merge: each tier lists its own files only. Each tier is
    // its own group, in this order, also under a plain `vitest run` (vitest runs projects of different maxWorkers in
    // different groups only).
    projects: Object.entries(TIERS).map(([name, tier], order) => ({
      test: { ...shared, name, sequence: { groupOrder: order }, ...tier },
    })),
  },
});
