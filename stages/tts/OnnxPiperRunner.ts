/**
 * A Piper (VITS) voice over onnxruntime-node: phoneme ids [B, N] (+ their lengths, the scales [noise, length,
 * noise_w] and, for a voice with several speakers, the speaker ids) -> audio [B, 1, 1, samples] at the voice's rate.
 *
 * Items of one run are right-padded to the longest; input_lengths masks the padding in the text encoder, the
 * duration predictor and the flow, so an item's durations and latent frames are its own. The decoder (HiFi-GAN)
 * takes no mask: a shorter row's last few samples hear the padded frames after it where a run alone hears zeros,
 * which moves them by a few LSB (measured: <= 3.2 LSB at the very last samples, < 1 LSB elsewhere). Rows are cut to
 * their own length from the durations (piperGraph.ts). Padding costs compute, and a run pays for its longest item,
 * so a batch is split into runs whose lengths stay within PAD_RATIO of each other.
 *
 * Audio is returned as the model makes it, clipped to [-1, 1], not normalized to full scale per sentence as piper's
 * `synthesize` does by default: streamed phrase by phrase, per-phrase gain would make the loudness jump at every
 * phrase boundary.
 */
import * as ort from 'onnxruntime-node';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { EngineArgs } from '../../src/common/graph.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import { readPiperGraph } from './piperGraph.ts';
import { loadVoiceConfig, type VoiceConfig, type VoiceScales } from './voiceConfig.ts';

/**
 * A run's rows stay within this ratio of lengths (longest / shortest): past it, padding costs more than batching
 * saves (measured on one thread: 4 equal rows ~20% faster per row than alone; rows padded by 1.7x, slower).
 */
export const PAD_RATIO = 1.25;

export interface PiperItem {
  readonly seqId: string;
  /** One sentence's phoneme ids, with its BOS, pads and EOS (phonemeIds.ts). */
  readonly ids: readonly number[];
}

export interface PiperRunnerOptions {
  /** Overrides of the voice config's scales (YAML). */
  readonly scales?: Partial<VoiceScales>;
  /** Multi-speaker voices: which speaker (default 0). */
  readonly speakerId?: number;
}

export class OnnxPiperRunner {
  /** Seconds of audio made and onnxruntime milliseconds spent, since load (their ratio: the real-time factor). */
  audioSeconds = 0;
  computeMs = 0;

  private constructor(
    private readonly session: SyncSession,
    private readonly durationsOutput: string | null,
    readonly voice: VoiceConfig,
    readonly scales: VoiceScales,
    private readonly speakerId: number | null,
  ) {}

  get sampleRateHz(): number {
    return this.voice.sampleRateHz;
  }

  /** Loads `<path>` and its `<path>.json` config (or `configPath`). */
  static load(
    path: string,
    engine: Pick<EngineArgs, 'threads'>,
    options: PiperRunnerOptions = {},
    configPath = `${path}.json`,
  ): OnnxPiperRunner {
    const voice = loadVoiceConfig(configPath);
    const graph = readPiperGraph(path);
    const session = SyncSession.create(graph.bytes, sessionOptions(engine), path);
    try {
      const inputs = session.inputNames;
      for (const name of ['input', 'input_lengths', 'scales']) {
        if (!inputs.includes(name)) {
          throw new ChorusError(
            ErrorCodes.MODEL_SIGNATURE,
            `${path} is not a Piper voice: it has no "${name}" input (inputs: ${inputs.join(', ')})`,
          );
        }
      }
      const multiSpeaker = inputs.includes('sid');
      const speakerId = multiSpeaker ? (options.speakerId ?? 0) : null;
      if (speakerId !== null && speakerId >= voice.numSpeakers) {
        throw new ChorusError(
          ErrorCodes.CONFIG_INVALID,
          `speaker ${speakerId} is not in ${path} (it has ${voice.numSpeakers} speakers: 0..${voice.numSpeakers - 1})`,
        );
      }
      const scales = { ...voice.scales, ...options.scales };
      return new OnnxPiperRunner(session, graph.durationsOutput, voice, scales, speakerId);
    } catch (err) {
      session.close();
      throw err;
    }
  }

  /**
   * Each item's audio (mono, [-1, 1], at sampleRateHz), in order. `padRatio`: how far apart in length the rows of
   * one run may be (default PAD_RATIO; Infinity: one run for all).
   */
  synthesize(items: readonly PiperItem[], padRatio = PAD_RATIO): Float32Array[] {
    const out = new Array<Float32Array>(items.length);
    const started = performance.now();
    for (const run of this.runsOf(items, padRatio)) {
      const audio = this.runOnce(run.map((i) => items[i]));
      run.forEach((i, b) => (out[i] = audio[b]));
    }
    this.computeMs += performance.now() - started;
    for (const a of out) this.audioSeconds += a.length / this.sampleRateHz;
    return out;
  }

  /** Item indices grouped into runs of similar length (each item alone when rows cannot be cut to length). */
  private runsOf(items: readonly PiperItem[], padRatio: number): number[][] {
    const order = items.map((_, i) => i);
    if (this.durationsOutput === null) return order.map((i) => [i]);
    order.sort((a, b) => items[a].ids.length - items[b].ids.length);
    const runs: number[][] = [];
    for (const i of order) {
      const run = runs.at(-1);
      if (run && items[i].ids.length <= items[run[0]].ids.length * padRatio) run.push(i);
      else runs.push([i]);
    }
    return runs;
  }

  private runOnce(items: readonly PiperItem[]): Float32Array[] {
    const batch = items.length;
    const maxLen = Math.max(...items.map((i) => i.ids.length));
    const input = new BigInt64Array(batch * maxLen); // zeros: padding (the pad symbol's id is 0 in Piper's maps)
    items.forEach((item, b) => item.ids.forEach((id, t) => (input[b * maxLen + t] = BigInt(id))));
    const { noiseScale, lengthScale, noiseW } = this.scales;
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor('int64', input, [batch, maxLen]),
      input_lengths: new ort.Tensor(
        'int64',
        BigInt64Array.from(items, (i) => BigInt(i.ids.length)),
        [batch],
      ),
      scales: new ort.Tensor('float32', Float32Array.of(noiseScale, lengthScale, noiseW), [3]),
    };
    if (this.speakerId !== null) {
      feeds.sid = new ort.Tensor('int64', new BigInt64Array(batch).fill(BigInt(this.speakerId)), [batch]);
    }
    const fetches = ['output', ...(this.durationsOutput ? [this.durationsOutput] : [])];
    const result = this.session.run(feeds, fetches);
    const audio = result.output.data as Float32Array;
    const perRow = audio.length / batch;
    const durations = this.durationsOutput ? (result[this.durationsOutput].data as Float32Array) : null;
    return items.map((_, b) => {
      let length = perRow;
      if (durations) {
        let frames = 0;
        for (let t = 0; t < maxLen; t++) frames += durations[b * maxLen + t];
        length = Math.min(perRow, frames * this.voice.hopLength);
      }
      const row = audio.slice(b * perRow, b * perRow + length);
      for (let i = 0; i < row.length; i++) row[i] = Math.max(-1, Math.min(1, row[i]));
      return row;
    });
  }

  async close(): Promise<void> {
    this.session.close();
  }
}
