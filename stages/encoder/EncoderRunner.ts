/**
 * An encoder over onnxruntime-node: a batch of items of one modality in, each item's rows out
 * (numEmbeddings * outputSize floats, row-major). Items of different lengths share a run by padding with
 * a mask (stages/encoder/encoderBatch.ts); the rows of each item are the same alone or batched.
 *
 * Like the other runners it only executes: what to batch and when is the budget planner's decision
 * (encoderBudget.ts), and caching is the EncoderCache's. run() is synchronous (SyncSession): it belongs in
 * a stage process, never on the server thread.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { EngineArgs } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { signatureError } from '../models/decoderSignature.ts';
import type { ModelFiles } from '../models/ensureModel.ts';
import {
  AUDIO_ENCODER_FILE,
  AUDIO_ENCODER_INPUTS,
  AUDIO_ENCODER_OUTPUT,
  VISION_ENCODER_FILE,
  VISION_ENCODER_INPUTS,
  VISION_ENCODER_OUTPUT,
} from '../models/encoderSignature.ts';
import { AUDIO_FRAMES_PER_EMBEDDING } from '../../src/media/audio.ts';
import { PREPROCESS_VERSION } from '../../src/media/mediaKey.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import { warmUp } from '../models/warmUp.ts';
import { packAudio, packImages, runInGroups, temporalGroups } from './encoderBatch.ts';
import { AudioWindows, type AudioWindowStats } from './AudioWindows.ts';
import type { AudioFeatures, EncoderInput, ImagePatches, Modality, VideoPatches } from '../../src/media/types.ts';
import { modalities } from '../../src/media/modalities/index.ts';

export interface EncoderRunner {
  readonly modality: Modality;
  /** Width of one row (the Thinker's hiddenSize). */
  readonly outputSize: number;
  /** Names the exact model (file hash, dtype, width, preprocessing version; encoderIdentity): in every cache key. */
  readonly identity: string;
  /** One batched run; returns each item's rows, numEmbeddings * outputSize floats. */
  encode(items: readonly EncoderInput[]): Float32Array[];
  /** A windowed audio encoder's window reuse (AudioWindows); absent or null otherwise. */
  readonly windowStats?: AudioWindowStats | null;
  /**
   * True when a clip's temporal groups encode apart (EncoderModelInfo.clipInGroups): any run of its groups gives the
   * clip's rows of that time, so a clip can be encoded, and its rows sent, piece by piece.
   */
  readonly clipGroupsApart?: boolean;
  close(): Promise<void>;
}

/** What the runner needs of the model: which modality, and the shape facts the session cannot tell. */
export interface EncoderModelInfo {
  readonly modality: Modality;
  /** Vision only: patches merged per row side (probed at load for a file model when absent). */
  readonly mergeSize?: number;
  /**
   * Audio only: the model attends within windows of this many mel frames (its rows depend on their own window's
   * frames only), so items are encoded window by window with a cache of windows (AudioWindows). Absent: the
   * model sees each item whole (a bring-your-own encoder with full attention).
   */
  readonly windowFrames?: number;
  /**
   * Vision only: the model attends within each temporal group of a clip (two frames), as Qwen2-VL's vision tower does
   * (its cu_seqlens cut a clip's patches per temporal patch), so a clip runs as a batch of its groups: its encode
   * grows with its frames, not with their square, and a group's rows depend on its own frames only. Absent: a clip
   * is one sequence (a bring-your-own encoder that attends over the whole clip).
   */
  readonly clipInGroups?: boolean;
}

/**
 * The encoder's identity, part of every cache and EC-store key: everything that decides which rows a given input
 * becomes. The model file's own bytes (not its folder name: a file replaced in place is another model), the output
 * dtype and width (rows of another width or precision must never be spliced into a Thinker), and the version of the
 * preprocessing front ends (mel, image normalisation). A generated model's seed changes its file, so its identity.
 */
export function encoderIdentity(facts: {
  readonly modality: Modality;
  readonly modelSha256: string;
  readonly dtype: string;
  readonly outputSize: number;
}): string {
  const fields = JSON.stringify({
    modality: facts.modality,
    model: facts.modelSha256,
    dtype: facts.dtype,
    width: facts.outputSize,
    preprocess: PREPROCESS_VERSION,
  });
  return createHash('sha256').update(fields).digest('hex').slice(0, 32);
}

function identityOf(files: ModelFiles, path: string, modality: Modality, outputSize: number, dtype: string): string {
  const modelSha256 = createHash('sha256').update(readFileSync(path)).digest('hex');
  const label = files.source === 'generated' ? basename(files.dir).replace(/-[0-9a-f]+$/, '') : 'file';
  return `${label}-${encoderIdentity({ modality, modelSha256, dtype, outputSize })}`;
}

function fixedDim(session: SyncSession, input: string, axis: number, what: string): number {
  const meta = session.inputMetadata.find((m) => m.name === input);
  const dim = meta?.shape[axis];
  if (!meta || meta.type !== 'float32' || typeof dim !== 'number') {
    throw signatureError(what, `needs a float32 input ${input} with a fixed size on axis ${axis}`);
  }
  return dim;
}

export class OnnxEncoderRunner implements EncoderRunner {
  private readonly windows: AudioWindows | null;

  private constructor(
    private readonly session: SyncSession,
    readonly modality: Modality,
    readonly outputSize: number,
    readonly identity: string,
    /** Audio: mel bins. Vision: 3 * patchSize^2. */
    private readonly inputWidth: number,
    private mergeSize: number,
    windowFrames: number | undefined,
    private readonly clipInGroups: boolean,
  ) {
    this.windows = modality === 'audio' && windowFrames !== undefined ? new AudioWindows(windowFrames, identity) : null;
  }

  /** Windows reused and encoded (a windowed audio encoder), null otherwise. */
  get windowStats(): AudioWindowStats | null {
    return this.windows?.stats ?? null;
  }

  get clipGroupsApart(): boolean {
    return this.clipInGroups;
  }

  static load(files: ModelFiles, info: EncoderModelInfo, engine: Pick<EngineArgs, 'threads'>): OnnxEncoderRunner {
    const path =
      files.source === 'file'
        ? files.files.model
        : files.files[info.modality === 'audio' ? AUDIO_ENCODER_FILE : VISION_ENCODER_FILE];
    const what = `${info.modality} encoder ${basename(path)}`;
    const session = SyncSession.create(path, sessionOptions(engine));
    try {
      const inputs = info.modality === 'audio' ? AUDIO_ENCODER_INPUTS : VISION_ENCODER_INPUTS;
      const output = info.modality === 'audio' ? AUDIO_ENCODER_OUTPUT : VISION_ENCODER_OUTPUT;
      for (const name of Object.values(inputs)) {
        if (!session.inputNames.includes(name))
          throw signatureError(what, `needs inputs ${Object.values(inputs).join(', ')}; ${name} is missing`);
      }
      const out = session.outputMetadata.find((m) => m.name === output);
      const outputSize = out?.shape[2];
      if (!out || typeof outputSize !== 'number')
        throw signatureError(what, `needs an output ${output} [batch, rows, hiddenSize] with a fixed hiddenSize`);
      const inputWidth = fixedDim(
        session,
        info.modality === 'audio' ? AUDIO_ENCODER_INPUTS.features : VISION_ENCODER_INPUTS.patches,
        info.modality === 'audio' ? 1 : 2,
        what,
      );
      const runner = new OnnxEncoderRunner(
        session,
        info.modality,
        outputSize,
        identityOf(files, path, info.modality, outputSize, out.type),
        inputWidth,
        info.mergeSize ?? 0,
        info.windowFrames,
        info.clipInGroups === true,
      );
      warmUp(what, () => runner.probe(what));
      return runner;
    } catch (err) {
      session.close();
      throw err;
    }
  }

  /**
   * The warm-up run, which also checks (or, for a file model without a mergeSize, measures) how many rows
   * the model gives, since the embedding counts promised to the scheduler depend on it.
   */
  private probe(what: string): void {
    if (this.modality === 'audio') {
      // A windowed model pads to whole windows: probe with exactly one.
      const numFrames = this.windows?.windowFrames ?? 2 * AUDIO_FRAMES_PER_EMBEDDING;
      const expected = numFrames / AUDIO_FRAMES_PER_EMBEDDING;
      const rows = this.rawRows(
        packAudio(
          [
            {
              modality: 'audio',
              mel: new Float32Array(this.inputWidth * numFrames),
              numMelBins: this.inputWidth,
              numFrames,
              numEmbeddings: expected,
            },
          ],
          this.inputWidth,
        ),
      );
      if (rows !== expected)
        throw signatureError(
          what,
          `gives ${rows} rows for ${numFrames} mel frames; Chorus counts 1 row per ${AUDIO_FRAMES_PER_EMBEDDING} ` +
            `frames (25 per second)`,
        );
      return;
    }
    const numPatches = 16; // a 4 x 4 grid: one group for merge 4, four for merge 2, 16 for no merge
    const positions = Int32Array.from({ length: 32 }, (_, i) => (i % 2 === 0 ? Math.floor(i / 8) : (i >> 1) % 4));
    const rows = this.rawRows(
      packImages(
        [
          {
            modality: 'image',
            patches: new Float32Array(numPatches * this.inputWidth),
            positions,
            patchSize: 0,
            mergeSize: 0,
            gridHeight: 4,
            gridWidth: 4,
            numPatches,
            numEmbeddings: 0,
          },
        ],
        this.inputWidth,
      ),
    );
    const measured = Math.sqrt(numPatches / rows);
    if (!Number.isInteger(measured))
      throw signatureError(what, `gives ${rows} rows for ${numPatches} patches: not a square merge`);
    if (this.mergeSize === 0) this.mergeSize = measured;
    if (measured !== this.mergeSize)
      throw signatureError(what, `merges ${measured}x${measured} patches per row, but its size says ${this.mergeSize}`);
  }

  private rawRows(feeds: ReturnType<typeof packAudio>): number {
    const out = this.session.run(feeds, [this.modality === 'audio' ? AUDIO_ENCODER_OUTPUT : VISION_ENCODER_OUTPUT]);
    return Object.values(out)[0].dims[1];
  }

  encode(items: readonly EncoderInput[]): Float32Array[] {
    if (items.length === 0) return [];
    for (const item of items) this.check(item);
    if (this.windows)
      return this.windows.encode(items as readonly AudioFeatures[], this.outputSize, (w) => this.run(w));
    if (this.clipInGroups)
      return runInGroups(
        items,
        (item) => (item.modality === 'video' ? temporalGroups(item) : null),
        (parts) => this.run(parts),
      );
    return this.run(items);
  }

  /** One run over the items as given (whole items, or windows of them). */
  private run(items: readonly EncoderInput[]): Float32Array[] {
    const feeds =
      this.modality === 'audio'
        ? packAudio(items as readonly AudioFeatures[], this.inputWidth)
        : packImages(items as readonly (ImagePatches | VideoPatches)[], this.inputWidth);
    const name = this.modality === 'audio' ? AUDIO_ENCODER_OUTPUT : VISION_ENCODER_OUTPUT;
    let output;
    try {
      output = this.session.run(feeds, [name])[name];
    } catch (err) {
      throw new ChorusError(
        ErrorCodes.ENCODER_FAILED,
        `${this.modality} encoder run failed for a batch of ${items.length}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const [batch, rowsPerItem, width] = output.dims;
    const data = output.data as Float32Array;
    if (batch !== items.length || width !== this.outputSize) {
      throw new ChorusError(
        ErrorCodes.ENCODER_FAILED,
        `${this.modality} encoder returned [${output.dims.join(', ')}] for ${items.length} items of width ` +
          `${this.outputSize}`,
      );
    }
    return items.map((item, b) => {
      if (item.numEmbeddings > rowsPerItem) {
        throw new ChorusError(
          ErrorCodes.ENCODER_FAILED,
          `${this.modality} encoder returned ${rowsPerItem} rows; the item needs ${item.numEmbeddings}`,
        );
      }
      const base = b * rowsPerItem * width;
      return data.slice(base, base + item.numEmbeddings * width);
    });
  }

  private check(item: EncoderInput): void {
    if (modalities[item.modality].encoder !== modalities[this.modality].encoder)
      throw new ChorusError(ErrorCodes.INTERNAL, `a ${item.modality} item was sent to the ${this.modality} encoder`);
    if (item.modality === 'audio') {
      if (item.numMelBins !== this.inputWidth)
        throw new ChorusError(
          ErrorCodes.INTERNAL,
          `audio features have ${item.numMelBins} mel bins; the encoder reads ${this.inputWidth}`,
        );
      if (item.numEmbeddings !== Math.ceil(item.numFrames / AUDIO_FRAMES_PER_EMBEDDING)) {
        throw new ChorusError(
          ErrorCodes.INTERNAL,
          `audio item of ${item.numFrames} frames claims ${item.numEmbeddings} embeddings`,
        );
      }
    } else {
      if (3 * item.patchSize * item.patchSize !== this.inputWidth || item.mergeSize !== this.mergeSize) {
        throw new ChorusError(
          ErrorCodes.INTERNAL,
          `image patches of ${item.patchSize} px merged ${item.mergeSize}x${item.mergeSize} do not fit this ` +
            `encoder (patch width ${this.inputWidth}, merge ${this.mergeSize})`,
        );
      }
    }
  }

  /** Patch size and merge of the loaded vision model (to build the matching ImageGridConfig). */
  get visionGrid(): { readonly patchSize: number; readonly mergeSize: number } | null {
    return modalities[this.modality].encoder === 'vision'
      ? { patchSize: Math.round(Math.sqrt(this.inputWidth / 3)), mergeSize: this.mergeSize }
      : null;
  }

  async close(): Promise<void> {
    this.session.close();
  }
}
