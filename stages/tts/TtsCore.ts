/**
 * The tts stage: the Thinker's text in, speech out. Token ids arrive as they are sampled; a streaming detokenizer
 * turns them into text, the PhraseSplitter cuts it into phrases, and each phrase is phonemized (asynchronously:
 * phonemizer's API is a promise) into sentences of phoneme ids, kept in order per request. Every request with a
 * sentence ready is a candidate for the next step (GenerationScheduler: up to max_num_seqs, one sentence per request,
 * oldest or least slack first); the voice runs them as one batch, and each sentence's audio, resampled to the
 * client's 24 kHz, goes to main at once. The last sentence (or an empty chunk, when the text ended with nothing left
 * to say) carries the Thinker's finish reason.
 */
import { GenerationScheduler } from '../../src/sched/GenerationScheduler.ts';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { AudioBody } from '../../src/common/payloads.ts';
import { resample } from '../../src/media/resample.ts';
import { StreamingDetokenizer, type Tokenizer } from '../../src/tokenizer/index.ts';
import type { AddRequest, PlaybackPlan, StageStats } from '../../src/worker/messages.ts';
import { StageCore, type CoreRequest, type StageContext } from '../../src/worker/StageCore.ts';
import type { PiperItem } from './OnnxPiperRunner.ts';
import { phonemeIds, type PhonemeIdMap } from './phonemeIds.ts';
import { PhraseSplitter, type PhrasePolicy } from './PhraseSplitter.ts';
import type { TtsArgs, TtsKindStats } from './protocol.ts';
import { OUTPUT_RATE_HZ } from './ttsSettings.ts';

interface Sentence {
  /** Phoneme ids, or null: nothing to say, only the end to report. */
  readonly ids: number[] | null;
  final: FinishReason | null;
}

interface TtsRequest extends CoreRequest {
  readonly detokenizer: StreamingDetokenizer;
  readonly splitter: PhraseSplitter;
  /** Phonemization of this request's phrases, one after another (the order of its audio). */
  chain: Promise<void>;
  /** Sentences phonemized and not yet synthesized, in order. */
  readonly ready: Sentence[];
  readonly playback: PlaybackPlan | null;
  firstSentAtMs: number | null;
  audioMsSent: number;
}

/** What the core needs of the voice (OnnxPiperRunner; a test's fake). */
export interface VoiceRunner {
  readonly sampleRateHz: number;
  readonly voice: { readonly phonemeIdMap: PhonemeIdMap };
  readonly audioSeconds: number;
  readonly computeMs: number;
  synthesize(items: readonly PiperItem[]): Float32Array[];
}

/** What the core needs of the phonemizer (PiperPhonemizer; a test's fake). */
export interface SentencePhonemizer {
  sentences(text: string): Promise<string[][]>;
}

export interface TtsCoreOptions {
  readonly runner: VoiceRunner;
  readonly phonemizer: SentencePhonemizer;
  readonly tokenizer: Tokenizer;
  readonly phrases: PhrasePolicy;
}

export class TtsCore extends StageCore<TtsRequest, TtsArgs> {
  private readonly scheduler: GenerationScheduler;
  private readonly runner: VoiceRunner;
  private phrasesDone = 0;
  private missingPhonemes = 0;

  constructor(
    ctx: StageContext,
    private readonly options: TtsCoreOptions,
  ) {
    super(ctx);
    this.runner = options.runner;
    this.scheduler = new GenerationScheduler(ctx.spec.engine.maxNumSeqs, ctx.scheduling);
  }

  protected admit(msg: AddRequest<TtsArgs>): TtsRequest {
    return {
      requestId: msg.requestId,
      sampling: msg.sampling,
      downstream: msg.downstream,
      numOutputs: 0,
      detokenizer: new StreamingDetokenizer(this.options.tokenizer),
      splitter: new PhraseSplitter(this.options.phrases),
      chain: Promise.resolve(),
      ready: [],
      playback: msg.args.playback ?? null,
      firstSentAtMs: null,
      audioMsSent: 0,
    };
  }

  protected onChunk(req: TtsRequest, chunk: ReceivedChunk): void {
    const final = chunk.meta.final ? (chunk.meta.finishReason ?? 'stop') : null;
    const body = chunk.body;
    if (body !== null && body.kind !== 'text') {
      return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, `tts takes text, got ${body.kind}`));
    }
    if (body === null && !final) {
      return this.fail(
        req,
        new ChorusError(ErrorCodes.FRAME_INVALID, `a non-final chunk of ${req.requestId} is empty`),
      );
    }
    let text = '';
    for (const id of body?.tokenIds ?? []) text += req.detokenizer.push(id);
    const phrases = req.splitter.push(text);
    if (final) phrases.push(...req.splitter.push(req.detokenizer.flush()), ...req.splitter.end());
    for (const phrase of phrases) this.queuePhrase(req, phrase);
    if (final) this.queueEnd(req, final);
  }

  /**
   * Phonemizes the phrase after the request's earlier ones; its sentences then wait for a step. Wakes the loop when
   * done, whatever happened (a request gone meanwhile included: its phonemes are dropped).
   */
  private queuePhrase(req: TtsRequest, phrase: string): void {
    req.chain = req.chain.then(async () => {
      try {
        if (!this.isLive(req)) return;
        const sentences = await this.options.phonemizer.sentences(phrase);
        if (!this.isLive(req)) return;
        for (const symbols of sentences) {
          const { ids, missing } = phonemeIds(symbols, this.runner.voice.phonemeIdMap);
          this.missingPhonemes += missing.length;
          req.ready.push({ ids, final: null });
          this.scheduler.chunkArrived(req.requestId);
        }
        this.updateDeadline(req);
      } catch (err) {
        if (this.isLive(req))
          this.fail(req, new ChorusError(ErrorCodes.STAGE_FAILED, `phonemes: ${err}`, { cause: err }));
      } finally {
        this.ctx.wake?.();
      }
    });
  }

  /** The text has ended: the last sentence still to synthesize carries the finish, or an empty chunk does. */
  private queueEnd(req: TtsRequest, reason: FinishReason): void {
    req.chain = req.chain.then(() => {
      if (this.isLive(req)) {
        const last = req.ready.at(-1);
        if (last) last.final = reason;
        else {
          req.ready.push({ ids: null, final: reason });
          this.scheduler.chunkArrived(req.requestId);
        }
      }
      this.ctx.wake?.();
    });
  }

  private isLive(req: TtsRequest): boolean {
    return this.requests.get(req.requestId) === req;
  }

  /** The listener's buffer runs dry when the audio sent so far has played (before the first packet: its deadline). */
  private updateDeadline(req: TtsRequest): void {
    const pb = req.playback;
    if (pb)
      this.scheduler.setDeadline(req.requestId, (req.firstSentAtMs ?? pb.firstPacketDeadlineMs) + req.audioMsSent);
  }

  pause(requestId: string): void {
    this.scheduler.pause(requestId);
  }

  resume(requestId: string): void {
    this.scheduler.resume(requestId);
  }

  protected queueDepth(): number {
    return this.scheduler.queueDepth;
  }

  protected freeState(req: TtsRequest): void {
    this.scheduler.remove(req.requestId);
  }

  override stats(): StageStats {
    const kind: TtsKindStats = {
      tts: {
        phrases: this.phrasesDone,
        audioSeconds: this.runner.audioSeconds,
        computeMs: this.runner.computeMs,
        missingPhonemes: this.missingPhonemes,
      },
    };
    return { ...super.stats(), kind };
  }

  step(): boolean {
    const items = this.scheduler.schedule();
    if (items.length === 0) return false;
    const started = performance.now();
    const work = items.map(({ requestId }) => {
      const req = this.requests.get(requestId)!;
      return { req, sentence: req.ready.shift()! };
    });
    this.scheduler.update(items);
    const spoken = work.filter((w) => w.sentence.ids !== null);
    let audio: Float32Array[];
    try {
      audio = this.runner.synthesize(spoken.map((w) => ({ seqId: w.req.requestId, ids: w.sentence.ids! })));
    } catch (err) {
      for (const w of work)
        this.fail(w.req, new ChorusError(ErrorCodes.STAGE_FAILED, `tts synthesis failed: ${err}`, { cause: err }));
      return true;
    }
    const sentAtMs = Date.now();
    for (const w of work) {
      const i = spoken.indexOf(w);
      const pcm = i >= 0 ? resample(audio[i], this.runner.sampleRateHz, OUTPUT_RATE_HZ) : new Float32Array(0);
      if (pcm.length > 0) {
        w.req.firstSentAtMs ??= sentAtMs;
        w.req.audioMsSent += (pcm.length / OUTPUT_RATE_HZ) * 1000;
        this.updateDeadline(w.req);
        w.req.numOutputs++;
        this.phrasesDone++;
      }
      const body: AudioBody = { kind: 'audio', pcm, sampleRateHz: OUTPUT_RATE_HZ };
      if (w.sentence.final) this.finish(w.req, w.sentence.final, () => (pcm.length > 0 ? body : undefined));
      else if (pcm.length > 0) this.send(w.req, w.req.downstream, body);
    }
    this.recordStep(work.length, started, () => work.map((w) => [w.req.requestId, 1] as const));
    return true;
  }
}
