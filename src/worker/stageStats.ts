/**
 * A stage's stats report (the `stats` message, every STATS_INTERVAL_MS), declared once with its values' bounds: main
 * feeds these numbers to prom-client (which throws on NaN), to the router (queue depths, held prefix blocks) and to
 * admission, so a report that is not finite, in range and bounded is dropped by the control guard before any of
 * them reads it.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  Count,
  DurationMs,
  List,
  LongText,
  MAX_SAMPLES_PER_REPORT,
  NonNegative,
  PositiveCount,
  StageId,
} from '../common/wireValues.ts';

const closed = { additionalProperties: false } as const;

const EdgeSampleSchema = Type.Object(
  {
    from: StageId, // producing stage id
    to: StageId, // consuming stage id, or "main"
    latencyMs: DurationMs, // saved by the producer -> received by the consumer (same wall clock, one machine)
    bytes: Count,
  },
  closed,
);
export type EdgeSample = Static<typeof EdgeSampleSchema>;

/**
 * What a step did: prefill (it computed prompt positions: a new prompt, its chunks, or a recompute after preemption),
 * decode (every sequence in it computed the one position of its last output), or run (a stage that is not
 * autoregressive: an encoder, Code2Wav).
 */
const StepPhaseSchema = Type.Union([Type.Literal('prefill'), Type.Literal('decode'), Type.Literal('run')]);
export type StepPhase = Static<typeof StepPhaseSchema>;

const StepSampleSchema = Type.Object({ phase: StepPhaseSchema, ms: DurationMs }, closed);
export type StepSample = Static<typeof StepSampleSchema>;

/** Autoregressive stages (Thinker, Talker): totals since the process started, and the KV held now. */
const ArStatsSchema = Type.Object(
  {
    /** Prompt positions computed (positions taken from the prefix cache are not: PrefixStats counts those). */
    promptTokens: Count,
    /** Outputs sampled: the Thinker's text tokens, the Talker's codec frames. */
    generatedTokens: Count,
    /** KV held by the requests in the scheduler now, and its budget (engine.kv_cache_bytes). */
    kvUsedBytes: Count,
    kvBudgetBytes: Count,
  },
  closed,
);
export type ArStats = Static<typeof ArStatsSchema>;

/** The names of a Thinker's cached blocks, for main's router (src/sched/PrefixCache.ts HeldBlocks). */
const HeldBlocksSchema = Type.Object(
  {
    root: LongText, // the model's settings, as JSON (blockNames.ts modelRoot)
    blockPositions: PositiveCount,
    names: List(Type.String({ maxLength: 64 }), 16_384),
  },
  closed,
);

/**
 * A kind's stats section on the wire: named parts (`prefix`, `encoder`, `code2wav`...), each typed by the kind that
 * sends it (its protocol.ts) and read on main through that kind's accessor. Checked here for what every part is:
 * counts and sizes, finite and non-negative, a flag, or a prefix cache's held blocks.
 */
const KindPartSchema = Type.Record(
  Type.String({ pattern: '^[a-zA-Z][a-zA-Z0-9]*$', maxLength: 64 }),
  Type.Union([NonNegative, Type.Boolean(), HeldBlocksSchema]),
  { additionalProperties: false, maxProperties: 64 },
);
const KindStatsSchema = Type.Unsafe<object>(
  Type.Record(Type.String({ pattern: '^[a-zA-Z][a-zA-Z0-9]*$', maxLength: 64 }), KindPartSchema, {
    additionalProperties: false,
    maxProperties: 16,
  }),
);
export type KindStats = object;

const samples = <T extends Parameters<typeof List>[0]>(items: T) => List(items, MAX_SAMPLES_PER_REPORT);

export const StageStatsSchema = Type.Object(
  {
    queueDepth: Count, // requests waiting (not yet running)
    running: Count,
    batchSize: Count, // of the last step
    stepMs: DurationMs,
    /** Since the previous report (bounded): batch size of every step, and received chunks. */
    batchSizes: samples(Count),
    edgeSamples: samples(EdgeSampleSchema),
    /** Since the previous report (bounded, like batchSizes): every step's duration and phase. */
    steps: Type.Optional(samples(StepSampleSchema)),
    /** The autoregressive stages (ArStageCore: Thinker, Talker). */
    ar: Type.Optional(ArStatsSchema),
    /**
     * The kind's own section (its encoder cache, prefix cache, vocoder states...): typed by the kind's protocol
     * (stages/<kind>/protocol.ts), read on main through that protocol's accessors.
     */
    kind: Type.Optional(KindStatsSchema),
  },
  closed,
);
export type StageStats = Static<typeof StageStatsSchema>;
