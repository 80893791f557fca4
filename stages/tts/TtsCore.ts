/**
 * The tts stage: the Thinker's text in, speech out. Token ids arrive as they are sampled; a streaming detokenizer
 * turns them into text, the PhraseSplitter cuts it into phrases, and each phrase is phonemized (asynchronously:
 * phonemizer's API is a promise) into sentences of phoneme ids, kept in order per request. Every request with a
 * sentence ready is a candidate for the next step (GenerationScheduler: one sentence per request, oldest or least
 * slack first). A step is one run of the voice: the first candidate's sentence, batched with the others' only where
 * that keeps it on time (batchFor), so a long sentence of a listener with audio in hand never holds up one whose
 * buffer is about to run dry; each sentence's audio, resampled to the client's 24 kHz, goes to main at once. A later
 * phrase is cut before its sentence ends when its listener would otherwise run dry (the lead rule, lead.ts). The
 * last sentence (or an empty chunk, when the text ended with nothing left to say) carries the Thinker's finish reason.
 */
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { AudioBody } from '../../src/common/payloads.ts';
import { resample } from '../../src/media/resample.ts';
import { StreamingDetokenizer, type Tokenizer } from '../../src/tokenizer/index.ts';
import { AudioStageCore, audioRequestOf, type AudioRequest } from '../../src/worker/AudioStageCore.ts';
import type { AddRequest, StageStats } from '../../src/worker/messages.ts';
import type { StageContext } from '../../src/worker/StageCore.ts';
import { leadView, mustCutEarly, type LeadRequest } from './lead.ts';
import { PAD_RATIO, type PiperItem } from './OnnxPiperRunner.ts';
import { phonemeIds, type PhonemeIdMap } from './phonemeIds.ts';
import { PhraseSplitter, type PhrasePolicy } from './PhraseSplitter.ts';
import type { TtsArgs, TtsKindStats } from './protocol.ts';
import { SpeechPace } from './speechPace.ts';
import { DEFAULT_LEAD_MARGIN, OUTPUT_RATE_HZ } from './ttsSettings.ts';

interface Sentence {
  /** Phoneme ids, or null: nothing to say, only the end to report. */
  readonly ids: number[] | null;
  final: FinishReason | null;
}

interface TtsRequest extends AudioRequest {
  readonly detokenizer: StreamingDetokenizer;
  readonly splitter: PhraseSplitter;
  /** Phonemization of this request's phrases, one after another (the order of its audio). */
  chain: Promise<void>;
  /** Characters of its phrases in the chain, not yet phonemized. */
  phonemizingChars: number;
  /** Sentences phonemized and not yet synthesized, in order. */
  readonly ready: Sentence[];
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
  /** The lead rule's margin (lead.ts; 0: phrases are never cut early). Default DEFAULT_LEAD_MARGIN. */
  readonly leadMargin?: number;
}

export class TtsCore extends AudioStageCore<TtsRequest, TtsArgs> {
  private readonly runner: VoiceRunner;
  private phrasesDone = 0;
  /** Phrases the lead rule cut before their sentence ended. */
  private earlyCuts = 0;
  private missingPhonemes = 0;
  private readonly pace = new SpeechPace();
  private readonly leadMargin: number;

  constructor(
    ctx: StageContext,
    private readonly options: TtsCoreOptions,
  ) {
    super(ctx);
    this.runner = options.runner;
    this.leadMargin = options.leadMargin ?? DEFAULT_LEAD_MARGIN;
  }

  protected admit(msg: AddRequest<TtsArgs>): TtsRequest {
    return {
      ...audioRequestOf(msg),
      detokenizer: new StreamingDetokenizer(this.options.tokenizer),
      splitter: new PhraseSplitter(this.options.phrases),
      chain: Promise.resolve(),
      phonemizingChars: 0,
      ready: [],
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
    else phrases.push(...this.leadCut(req));
    for (const phrase of phrases) this.queuePhrase(req, phrase);
    if (final) this.queueEnd(req, final);
  }

  /**
   * Phonemizes the phrase after the request's earlier ones; its sentences then wait for a step. Wakes the loop when
   * done, whatever happened (a request gone meanwhile included: its phonemes are dropped).
   */
  private queuePhrase(req: TtsRequest, phrase: string): void {
    req.phonemizingChars += phrase.length;
    req.chain = req.chain.then(async () => {
      try {
        if (!this.isLive(req)) return;
        const sentences = await this.options.phonemizer.sentences(phrase);
        if (!this.isLive(req)) return;
        let numIds = 0;
        for (const symbols of sentences) {
          const { ids, missing } = phonemeIds(symbols, this.runner.voice.phonemeIdMap);
          this.missingPhonemes += missing.length;
          numIds += ids.length;
          req.ready.push({ ids, final: null });
          this.scheduler.chunkArrived(req.requestId);
        }
        this.pace.countPhrase(phrase.length, numIds);
        this.updateDeadline(req);
      } catch (err) {
        if (this.isLive(req))
          this.fail(req, new ChorusError(ErrorCodes.STAGE_FAILED, `phonemes: ${err}`, { cause: err }));
      } finally {
        req.phonemizingChars -= phrase.length;
        this.ctx.wake?.();
      }
    });
  }

  /** The lead rule (lead.ts): the pending text as a phrase now when waiting for its end would leave it late. */
  private leadCut(req: TtsRequest): string[] {
    if (this.leadMargin <= 0 || req.playback === null || req.splitter.numPhrases === 0) return [];
    const nowMs = Date.now();
    const all = [...this.requests.values()].map((r) => [r, this.leadRequestOf(r)] as const);
    const view = leadView(
      all.find(([r]) => r === req)![1],
      req.splitter.pendingChars,
      all.map(([, l]) => l),
      this.pace,
      nowMs,
    );
    if (view === null || !mustCutEarly(view, this.leadMargin)) return [];
    const cut = req.splitter.cutEarly();
    this.earlyCuts += cut.length;
    return cut;
  }

  private leadRequestOf(req: TtsRequest): LeadRequest {
    return {
      queuedIds: req.ready.map((s) => s.ids?.length ?? 0),
      phonemizingChars: req.phonemizingChars,
      dryAtMs: req.firstSentAtMs === null ? null : this.dryAtMs(req),
    };
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

  /**
   * What one step synthesizes, from the scheduler's candidates in its order: the first sentence with something to
   * say (the anchor), and beside it the other candidates' sentences of a similar length (within the voice's pad
   * ratio, so they share its run) while the run's measured cost still ends before the anchor's listener runs dry.
   * Sentences with nothing to say (an answer's end) go along at no cost; the rest wait for the next step.
   */
  private batchFor(candidates: readonly TtsRequest[], nowMs: number): TtsRequest[] {
    const lengthOf = (r: TtsRequest) => r.ready[0].ids?.length ?? 0;
    const anchor = candidates.find((r) => lengthOf(r) > 0);
    if (!anchor) return [...candidates];
    const slackMs = (this.dryAtMs(anchor) ?? Infinity) - nowMs;
    const batch = [anchor];
    let longest = lengthOf(anchor);
    for (const r of candidates) {
      const length = lengthOf(r);
      if (r === anchor) continue;
      if (length === 0) {
        batch.push(r);
        continue;
      }
      if (length > lengthOf(anchor) * PAD_RATIO || length * PAD_RATIO < lengthOf(anchor)) continue;
      const costMs = this.pace.costMs(longest, batch.length + 1) ?? Infinity;
      if (slackMs !== Infinity && costMs > slackMs) continue;
      batch.push(r);
      longest = Math.max(longest, length);
    }
    return batch;
  }

  override stats(): StageStats {
    const kind: TtsKindStats = {
      tts: {
        phrases: this.phrasesDone,
        audioSeconds: this.runner.audioSeconds,
        computeMs: this.runner.computeMs,
        missingPhonemes: this.missingPhonemes,
        earlyCuts: this.earlyCuts,
      },
    };
    return { ...super.stats(), kind };
  }

  step(): boolean {
    const candidates = this.scheduler.schedule();
    if (candidates.length === 0) return false;
    const started = performance.now();
    const chosen = this.batchFor(
      candidates.map(({ requestId }) => this.requests.get(requestId)!),
      Date.now(),
    );
    const work = chosen.map((req) => ({ req, sentence: req.ready.shift()! }));
    this.scheduler.update(chosen);
    const spoken = work.filter((w) => w.sentence.ids !== null);
    let audio: Float32Array[];
    try {
      audio = this.runner.synthesize(spoken.map((w) => ({ seqId: w.req.requestId, ids: w.sentence.ids! })));
      this.pace.measureRun(
        spoken.map((w) => w.sentence.ids!.length),
        performance.now() - started,
      );
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
        const audioMs = (pcm.length / OUTPUT_RATE_HZ) * 1000;
        this.pace.countAudio(w.sentence.ids!.length, audioMs);
        this.audioSent(w.req, audioMs, sentAtMs);
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
