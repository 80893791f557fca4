/**
 * The main-side view of one request: assembles output chunks from the final-output stages into OutputEvents
 * (detokenized text, PCM audio) and ends with exactly one `done`. Text and audio are independent: each arrives on
 * its own edge and is emitted the moment it lands.
 */
import type { Modality } from '../common/modality.ts';
import { OutputChannel } from './OutputChannel.ts';
import type { ReceivedChunk } from '../../transport/registry.ts';
import type { AudioOutputFacts } from '../common/modelFacts.ts';
import type { AudioBody, TextBody, TokenLogprobs } from '../common/payloads.ts';
import type { FinishReason, PromptTokens, TextLogprob, Usage } from '../common/engine.ts';
import { diagnostics } from '../common/diagnostics.ts';
import { ErrorCodes, type SerializedError } from '../common/errors.ts';
import type { ReplayCursor } from './requests/migration.ts';

export interface TextDecoderLike {
  push(tokenId: number): string;
  flush(): string;
}

export class RequestStream {
  /** Delivered events are not kept (OutputChannel): a long answer's audio does not pile up in main. */
  readonly events = new OutputChannel();
  private open: Set<string>; // output stage ids whose final chunk has not arrived
  private done = false;
  private textReason: FinishReason | null = null;
  private completionTokens = 0;
  private audioSamples = 0;
  private audioSeq = 0;
  firstTextAtMs: number | null = null;
  firstAudioAtMs: number | null = null;
  /**
   * Called once, right after the first audio's event (its consumers have it), or when the audio output ends without
   * any (the Orchestrator ends the Thinker's first-packet hold with it).
   */
  onAudioStarted: (() => void) | null = null;
  /** Token ids and the Thinker's logprobs -> their text (set by openStream; a request with logprobs needs it). */
  logprobText: ((tokenIds: readonly number[], logprobs: readonly TokenLogprobs[]) => TextLogprob[]) | null = null;
  private readonly warnings = new Set<string>();
  private readonly droppedItems = new Set<number>();
  private cachedTokens = 0;
  /** Set while the request is replayed after a lost instance: what of its output the client already has. */
  private replayCursor: ReplayCursor | null = null;
  private onReplayCaughtUp: (() => void) | null = null;

  constructor(
    readonly requestId: string,
    public stageInstances: ReadonlyMap<string, string>, // stageId -> instance used
    outputStages: readonly { stageId: string; type: 'text' | 'audio' }[],
    private promptTokens: number,
    /** The prompt's media items in plan order: their embeddings count as media input (by modality), not text. */
    private promptItems: readonly { modality: Modality; numEmbeddings: number }[],
    private readonly detokenizer: TextDecoderLike,
    /** The vocoder's facts from its READY report; null when the request has no audio output. */
    private readonly audio: AudioOutputFacts | null,
    private readonly onEnd: (stream: RequestStream, reason: FinishReason) => void,
    /** When the first audio packet should be out (ms after the start); a miss is reported in done's warnings. */
    private readonly ttfpTargetMs: number | null = null,
    /** When the engine took the request (epoch ms): its TTFT and TTFP count from here. */
    readonly startedAtMs = Date.now(),
  ) {
    this.open = new Set(outputStages.map((s) => s.stageId));
    this.kinds = new Map(outputStages.map((s) => [s.stageId, s.type]));
  }

  private readonly kinds: Map<string, 'text' | 'audio'>;

  get finished(): boolean {
    return this.done;
  }

  /** Text tokens and audio samples delivered so far (what a replay must skip). */
  get delivered(): { readonly tokens: number; readonly samples: number } {
    return { tokens: this.completionTokens, samples: this.audioSamples };
  }

  /**
   * The request is replayed (requests/migration.ts) on `stageInstances`: every output is open again, and the
   * replay's first `cursor` tokens and samples, which the client has, are skipped. `caughtUp` is called once, when
   * the replay first delivers something new (or ends): the pause the client saw ends there.
   */
  replay(stageInstances: ReadonlyMap<string, string>, cursor: ReplayCursor, caughtUp: () => void): void {
    this.stageInstances = stageInstances;
    this.open = new Set(this.kinds.keys());
    this.replayCursor = cursor;
    this.onReplayCaughtUp = caughtUp;
  }

  /**
   * The request runs again on `stageInstances` with another prompt (an item encoded again, with fewer frames for a
   * clip: requests/Reencodes.ts). Nothing was delivered yet (its Thinker waited for that item), so every output is
   * open again and usage counts the new prompt.
   */
  rerun(
    stageInstances: ReadonlyMap<string, string>,
    promptTokens: number,
    promptItems: readonly { modality: Modality; numEmbeddings: number }[],
  ): void {
    this.stageInstances = stageInstances;
    this.open = new Set(this.kinds.keys());
    this.promptTokens = promptTokens;
    this.promptItems = promptItems;
    this.droppedItems.clear();
  }

  /** Takes a warning back (a re-encoded clip's earlier warning, replaced by the one for its last step). */
  removeWarning(warning: string): void {
    this.warnings.delete(warning);
  }

  private replayCaughtUp(): void {
    const caughtUp = this.onReplayCaughtUp;
    this.onReplayCaughtUp = null;
    caughtUp?.();
  }

  /** Notes for the done event (a Thinker that dropped a media item). Reported by chunk and by message: deduplicated. */
  addWarnings(warnings: readonly string[]): void {
    for (const w of warnings) this.warnings.add(w);
  }

  onChunk(fromStageId: string, chunk: ReceivedChunk): void {
    if (this.done) return;
    const m = chunk.meta;
    const body = chunk.body;
    if (body?.kind === 'text') this.onText(body, m.final);
    else if (body?.kind === 'audio') this.onAudio(body);
    else if (body !== null) {
      this.end('error', { code: ErrorCodes.FRAME_INVALID, message: `${m.from} sent main a ${body.kind} chunk` });
      return;
    }
    if (!m.final) return;
    if (this.kinds.get(fromStageId) === 'audio') this.audioStarted();
    this.open.delete(fromStageId);
    if (m.finishReason === 'error' || m.finishReason === 'cancelled') {
      this.end(m.finishReason, m.error);
      return;
    }
    if (this.kinds.get(fromStageId) === 'text') this.textReason = m.finishReason ?? 'stop';
    if (this.open.size === 0) this.end(this.textReason ?? m.finishReason ?? 'stop');
  }

  /** The release, once: now, or (`atTurnEnd`) once this turn's writes are out (see onAudio). */
  private audioStarted(atTurnEnd = false): void {
    const started = this.onAudioStarted;
    this.onAudioStarted = null;
    if (started && atTurnEnd) setImmediate(started);
    else started?.();
  }

  private onText(body: TextBody, final: boolean): void {
    if (final && body.warnings) this.addWarnings(body.warnings);
    if (final) for (const item of body.droppedItems ?? []) this.droppedItems.add(item);
    // A replay's prefill may hit what the lost run left in the prefix cache: usage reports the first run's.
    if (final && body.cachedTokens && !this.replayCursor) this.cachedTokens = body.cachedTokens;
    const tokenIds = this.replayCursor ? this.replayCursor.newTokens(body.tokenIds) : body.tokenIds;
    const logprobs =
      body.logprobs && this.logprobText
        ? { logprobs: this.logprobText(tokenIds, body.logprobs.slice(body.tokenIds.length - tokenIds.length)) }
        : {};
    // The text each token adds (a character split across tokens comes with the token that completes it).
    const texts = tokenIds.map((id) => this.detokenizer.push(id));
    const rest = final ? this.detokenizer.flush() : '';
    if (texts.length > 0) texts[texts.length - 1] += rest;
    const delta = texts.length > 0 ? texts.join('') : rest;
    this.completionTokens += tokenIds.length;
    if (delta.length === 0 && tokenIds.length === 0) return;
    const atMs = Date.now();
    this.firstTextAtMs ??= atMs;
    this.replayCaughtUp();
    const perToken = texts.length > 1 ? { tokenTexts: texts } : {};
    this.events.next({ type: 'text', delta, tokenIds, atMs, ...logprobs, ...perToken });
  }

  private onAudio(body: AudioBody): void {
    const pcm = this.replayCursor ? this.replayCursor.newSamples(body.pcm) : body.pcm;
    if (pcm.length === 0) return;
    // Copy out of the frame buffer: events may be held by slow consumers long after the frame is gone.
    const samples = Float32Array.from(pcm);
    this.replayCaughtUp();
    const atMs = Date.now();
    this.reportPlayback(atMs, body.sampleRateHz);
    this.firstAudioAtMs ??= atMs;
    this.audioSamples += samples.length;
    this.events.next({ type: 'audio', pcm: samples, sampleRateHz: body.sampleRateHz, seq: this.audioSeq++, atMs });
    // After this turn: the first packet leaves for the client first. A consumer writes it now, but an HTTP response
    // corks its socket until the next tick (Node's chunked writes go out together), and the hold's release is a
    // message to each of the request's stage processes: an IPC write that wakes one on this core, which then runs
    // ahead of main (the Thinker's step in a batch of 17: 5 ms before the newcomer's audio left; bench/NOTES.md,
    // "The first audio behind the Thinker's wake-up"). Before the event it was on the path outright (issue 46).
    this.audioStarted(true);
  }

  /**
   * The listener's buffer as main sees it: audio sent so far minus the time since the first packet (it plays from
   * then on). The first packet checks the TTFP target instead.
   */
  private reportPlayback(atMs: number, sampleRateHz: number): void {
    if (this.firstAudioAtMs !== null) {
      if (diagnostics.audioSlack.hasSubscribers) {
        const sentMs = (this.audioSamples / sampleRateHz) * 1000;
        diagnostics.audioSlack.publish({ requestId: this.requestId, slackMs: sentMs - (atMs - this.firstAudioAtMs) });
      }
      return;
    }
    if (this.ttfpTargetMs === null) return;
    const ttfpMs = atMs - this.startedAtMs;
    const met = ttfpMs <= this.ttfpTargetMs;
    if (!met)
      this.warnings.add(
        `ttfp_target_missed: the first audio came ${ttfpMs} ms after the request, over its ttfp_target_ms of ` +
          `${this.ttfpTargetMs} (the pipeline was too loaded to meet it)`,
      );
    diagnostics.ttfpTarget.publish({ requestId: this.requestId, targetMs: this.ttfpTargetMs, ttfpMs, met });
  }

  /** The prompt's positions by modality; items the Thinker cut out of the prompt (text_only) do not count. */
  promptTokenDetails(): PromptTokens {
    const counts = { text: this.promptTokens, audio: 0, image: 0, video: 0 };
    this.promptItems.forEach((item, index) => {
      counts.text -= item.numEmbeddings; // a placeholder position, not a text token
      if (!this.droppedItems.has(index)) counts[item.modality] += item.numEmbeddings;
    });
    return counts;
  }

  /** Ends the stream (idempotent): a cancel, an error, or all outputs complete. */
  end(reason: FinishReason, error?: SerializedError): void {
    if (this.done) return;
    this.done = true;
    this.replayCaughtUp();
    const details = this.promptTokenDetails();
    const usage: Usage = {
      promptTokens: details.text + details.audio + details.image + details.video,
      promptTokenDetails: details,
      completionTokens: this.completionTokens,
      ...(this.cachedTokens > 0 ? { cachedTokens: this.cachedTokens } : {}),
      audioFrames: this.audio ? Math.round(this.audioSamples / this.audio.samplesPerFrame) : 0,
      audioSeconds: this.audio ? this.audioSamples / this.audio.sampleRateHz : 0,
    };
    // An error says why it failed; a cancel carries its reason too (the client, or a server shutting down).
    const err =
      reason === 'error'
        ? (error ?? { code: ErrorCodes.INTERNAL, message: 'request failed' })
        : reason === 'cancelled'
          ? error
          : undefined;
    const warnings = this.warnings.size > 0 ? { warnings: [...this.warnings] } : {};
    this.events.next({
      type: 'done',
      finishReason: reason,
      ...(err ? { error: err } : {}),
      usage,
      atMs: Date.now(),
      ...warnings,
    });
    this.onEnd(this, reason);
  }
}
