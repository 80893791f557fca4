/**
 * Whisper over onnxruntime-node: 16 kHz samples -> a transcript, greedy, as faster-whisper's `transcribe` with
 * beam_size 1, temperature 0, without_timestamps and condition_on_previous_text off (its reference output is what
 * test/model/whisperAsr.test.ts compares against):
 *
 * - features: 160 zero samples appended, Whisper's log-mel with the clip's own clamp (max - 8), the last frame
 *   dropped, each 30 s window (3000 frames) zero-padded;
 * - prompt: a client's text prompt as <|startofprev|> and its last tokens (faster-whisper's initial_prompt), then
 *   <|startoftranscript|> (+ <|en|> <|transcribe|> for a multilingual model) <|notimestamps|>;
 * - each step: the config's suppress_ids never, suppress_ids_begin (blank, end of text) not first; argmax; stop at
 *   <|endoftext|> or after half the decoder's positions (Whisper's sample_len).
 *
 * Runs synchronously (onnxruntime's run is): call it off the server's event loop, in a stage process.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { EngineArgs } from '../../src/common/graph.ts';
import { logMelSpectrogram, MEL_HOP_SAMPLES, MEL_SAMPLE_RATE_HZ } from '../../src/media/logMel.ts';
import { HfTokenizer } from '../../src/tokenizer/index.ts';
import { SyncSession, sessionOptions } from '../models/SyncSession.ts';
import { Ct2File } from './Ct2File.ts';
import { buildWhisperDecoder, buildWhisperEncoder, whisperDims, type WhisperDims } from './whisperGraphs.ts';

const WINDOW_FRAMES = 3000; // 30 s at 100 frames/s: what Whisper's encoder was trained on

interface WhisperConfig {
  readonly suppress_ids?: readonly number[];
  readonly suppress_ids_begin?: readonly number[];
}

interface SpecialIds {
  readonly endOfText: number;
  readonly startOfPrevious: number;
  readonly prompt: readonly number[];
}

function specialIds(modelDir: string, multilingual: boolean): SpecialIds {
  const json = JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8')) as {
    added_tokens: { id: number; content: string }[];
  };
  const id = (content: string) => {
    const t = json.added_tokens.find((a) => a.content === content);
    if (!t) throw new ChorusError(ErrorCodes.TOKENIZER, `${modelDir}/tokenizer.json has no ${content}`);
    return t.id;
  };
  const task = multilingual ? [id('<|en|>'), id('<|transcribe|>')] : [];
  return {
    endOfText: id('<|endoftext|>'),
    startOfPrevious: id('<|startofprev|>'),
    prompt: [id('<|startoftranscript|>'), ...task, id('<|notimestamps|>')],
  };
}

export interface TranscribeResult {
  readonly text: string;
  readonly tokenIds: readonly number[];
}

export class WhisperRunner {
  /** Seconds of audio transcribed and milliseconds spent on it, since load (their ratio: the real-time factor). */
  audioSeconds = 0;
  computeMs = 0;

  private constructor(
    readonly dims: WhisperDims,
    private readonly encoder: SyncSession,
    private readonly decoder: SyncSession,
    private readonly tokenizer: HfTokenizer,
    private readonly special: SpecialIds,
    private readonly suppress: Int32Array,
    private readonly suppressBegin: Int32Array,
  ) {}

  /** Loads a CTranslate2 Whisper folder (model.bin, config.json, tokenizer.json), converting it to ONNX in memory. */
  static load(modelDir: string, engine: Pick<EngineArgs, 'threads'>): WhisperRunner {
    const file = Ct2File.open(join(modelDir, 'model.bin'));
    if (file.specName !== 'WhisperSpec')
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `${file.path} holds a ${file.specName}, not a Whisper model`);
    const dims = whisperDims(file);
    const options = sessionOptions(engine);
    const encoder = SyncSession.create(buildWhisperEncoder(file), options, `${modelDir} (encoder)`);
    const decoder = SyncSession.create(buildWhisperDecoder(file), options, `${modelDir} (decoder)`);
    const config = JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8')) as WhisperConfig;
    const multilingual = dims.vocabSize >= 51865; // the .en models' vocabulary is 51864
    return new WhisperRunner(
      dims,
      encoder,
      decoder,
      HfTokenizer.fromDir(modelDir),
      specialIds(modelDir, multilingual),
      Int32Array.from(config.suppress_ids ?? []),
      Int32Array.from(config.suppress_ids_begin ?? []),
    );
  }

  /**
   * The transcript of 16 kHz mono samples; `onDelta` gets the text as it grows, window by window, token by token.
   * `prompt`: words the speech is likely to hold (names, spellings), as Whisper's previous-text context.
   */
  transcribe(samples16k: Float32Array, onDelta?: (text: string) => void, prompt?: string | null): TranscribeResult {
    const context = prompt ? this.#promptIds(prompt) : [];
    const started = performance.now();
    const padded = new Float32Array(samples16k.length + MEL_HOP_SAMPLES);
    padded.set(samples16k);
    const { mel, numMelBins, numFrames } = logMelSpectrogram(padded, 'clip');
    const contentFrames = numFrames - 1;
    const tokenIds: number[] = [];
    let text = '';
    const emit = () => {
      const next = this.tokenizer.decode(tokenIds, { skipSpecialTokens: true });
      if (next.endsWith('\uFFFD') || next === text) return; // a character split across tokens: wait for its end
      onDelta?.(next.slice(text.length));
      text = next;
    };
    for (let seek = 0; seek < contentFrames; seek += WINDOW_FRAMES) {
      const window = new Float32Array(numMelBins * WINDOW_FRAMES); // zeros past the audio, as pad_or_trim
      const frames = Math.min(WINDOW_FRAMES, contentFrames - seek);
      for (let m = 0; m < numMelBins; m++)
        window.set(mel.subarray(m * numFrames + seek, m * numFrames + seek + frames), m * WINDOW_FRAMES);
      this.#decodeWindow(window, numMelBins, context, (id) => {
        tokenIds.push(id);
        emit();
      });
    }
    this.computeMs += performance.now() - started;
    this.audioSeconds += samples16k.length / MEL_SAMPLE_RATE_HZ;
    return { text: this.tokenizer.decode(tokenIds, { skipSpecialTokens: true }), tokenIds };
  }

  /** <|startofprev|> and the prompt's last tokens: at most half the decoder's positions less one, as Whisper. */
  #promptIds(prompt: string): number[] {
    const ids = this.tokenizer.encode(` ${prompt.trim()}`);
    return [this.special.startOfPrevious, ...ids.slice(-(this.dims.textPositions / 2 - 1))];
  }

  #decodeWindow(
    window: Float32Array,
    numMelBins: number,
    context: readonly number[],
    onToken: (id: number) => void,
  ): void {
    const cross = this.encoder.run({
      input_features: new ort.Tensor('float32', window, [1, numMelBins, WINDOW_FRAMES]),
    });
    const ids = [...context, ...this.special.prompt];
    const maxNew = Math.min(this.dims.textPositions / 2, this.dims.textPositions - ids.length);
    for (let step = 0; step < maxNew; step++) {
      const feeds: Record<string, ort.Tensor> = {
        ...cross,
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
      };
      const logits = this.decoder.run(feeds, ['logits']).logits.data as Float32Array;
      for (const id of this.suppress) logits[id] = -Infinity;
      if (step === 0) for (const id of this.suppressBegin) logits[id] = -Infinity;
      let best = 0;
      for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
      if (best === this.special.endOfText) return;
      ids.push(best);
      onToken(best);
    }
  }

  close(): void {
    this.encoder.close();
    this.decoder.close();
  }
}
