/**
 * One server's metrics of its engine's stage instances, from their stats reports and deaths (chorus:stage:stats,
 * chorus:stage:died): queue depth, batch sizes, encoder caches, Code2Wav's frames and states, prefix caches, steps and
 * KV. Each server has its own registry of them and counts only its own engine's reports (the `engine` tag the pool
 * puts on them, Engine.id): two engines in one process (the bench's two servers, async and sync) name their
 * instances alike ("code2wav#0"), and sharing one series would add or set one engine's totals over the other's (a
 * counter that moved with every report, a gauge that flipped between the two). /metrics serves this registry with
 * the process's (metricsExposition.ts).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Registry } from 'prom-client';
import { channelNames } from '../../common/diagnostics.ts';
import { code2wavStatsOf } from '../../../stages/code2wav/protocol.ts';
import { encoderStatsOf } from '../../../stages/encoder/protocol.ts';
import { talkerStatsOf } from '../../../stages/talker/protocol.ts';
import { thinkerStatsOf } from '../../../stages/thinker/protocol.ts';
import { stageMetricsIn } from './engineMetrics.ts';
import { isMetricNumber } from './metricValue.ts';
import { prefixCacheMetrics } from './prefixCacheMetrics.ts';
import { stageComputeMetrics } from './stageComputeMetrics.ts';
import { StageSeries } from './StageSeries.ts';

interface StageStatsMessage {
  readonly engine?: unknown;
  readonly stageId?: unknown;
  readonly instance?: unknown;
  readonly queueDepth?: unknown;
  readonly batchSizes?: unknown;
  /** The kind's section (StageStats.kind): read through the kinds' accessors. */
  readonly kind?: unknown;
  readonly steps?: unknown;
  readonly ar?: unknown;
}

/** The cumulative cache totals an encoder stage reports (stages/encoder/protocol.ts EncoderStats). */
interface EncoderStatsMessage {
  readonly cacheHits?: unknown;
  readonly cacheMisses?: unknown;
  readonly cacheEvictions?: unknown;
  readonly cacheBytes?: unknown;
}

export class StageMetrics {
  readonly registry = new Registry();
  readonly metrics = stageMetricsIn(this.registry);
  /** What each stage instance reports and holds: zeroed at its death. */
  readonly #series = new StageSeries();
  readonly #observePrefixCache = prefixCacheMetrics(this.registry, this.#series);
  readonly #observeStageCompute = stageComputeMetrics(this.registry, this.#series);
  readonly #onStats = (message: unknown) => {
    if (this.#ours(message)) this.#observe(message as StageStatsMessage);
  };
  readonly #onDied = (message: unknown) => {
    const instance = (message as { instance?: unknown }).instance;
    if (this.#ours(message) && typeof instance === 'string') this.#series.died(instance);
  };

  /**
   * `engine`: the id of the engine whose reports count (read per report: a reloading engine keeps one id across its
   * pipelines); undefined counts the untagged reports (an engine without an id, a test publishing them itself).
   */
  constructor(private readonly engine: () => string | undefined) {
    subscribe(channelNames.stageStats, this.#onStats);
    subscribe(channelNames.stageDied, this.#onDied);
  }

  /** Stops counting (the server closed). */
  close(): void {
    unsubscribe(channelNames.stageStats, this.#onStats);
    unsubscribe(channelNames.stageDied, this.#onDied);
  }

  #ours(message: unknown): boolean {
    return (message as { engine?: unknown }).engine === this.engine();
  }

  #observe(m: StageStatsMessage): void {
    // Replicas report separately: label by instance ("talker#1") so they do not overwrite each other.
    const stage = typeof m.instance === 'string' ? m.instance : typeof m.stageId === 'string' ? m.stageId : null;
    if (stage === null) return;
    if (isMetricNumber(m.queueDepth)) this.metrics.stageQueueDepth.set({ stage }, m.queueDepth);
    if (Array.isArray(m.batchSizes))
      for (const n of m.batchSizes) if (isMetricNumber(n)) this.metrics.stageBatchSize.observe({ stage }, n);
    const encoder = encoderStatsOf(m).encoder;
    if (typeof encoder === 'object' && encoder !== null) this.#observeEncoder(stage, encoder as EncoderStatsMessage);
    const code2wav = code2wavStatsOf(m).code2wav;
    if (typeof code2wav === 'object' && code2wav !== null) this.#observeCode2Wav(stage, code2wav);
    // Thinker and Talker sections both carry `prefix` (their prefix caches).
    const prefix = thinkerStatsOf(m).prefix ?? talkerStatsOf(m).prefix;
    if (typeof prefix === 'object' && prefix !== null)
      this.#observePrefixCache(stage, prefix as unknown as Record<string, unknown>);
    this.#observeStageCompute(stage, m.steps, m.ar);
  }

  /** Encoder cache stats, labelled like the other stage metrics, by instance. */
  #observeEncoder(stage: string, e: EncoderStatsMessage): void {
    const m = this.metrics;
    this.#series.count(stage, [
      ['cacheHits', e.cacheHits, m.encoderCacheHits],
      ['cacheMisses', e.cacheMisses, m.encoderCacheMisses],
      ['cacheEvictions', e.cacheEvictions, m.encoderCacheEvictions],
    ]);
    this.#series.hold(stage, m.encoderCacheBytes, e.cacheBytes);
  }

  /** Code2Wav's frame totals (stages/code2wav/protocol.ts Code2WavStats), as counters like the encoder's. */
  #observeCode2Wav(stage: string, c: { framesDecoded?: unknown; audioFrames?: unknown; states?: unknown }): void {
    const m = this.metrics;
    this.#series.count(stage, [
      ['framesDecoded', c.framesDecoded, m.code2wavFramesDecoded],
      ['audioFrames', c.audioFrames, m.code2wavAudioFrames],
    ]);
    this.#series.hold(stage, m.code2wavStates, c.states);
  }
}
