/**
 * The engine as the front end (src/server), the CLI and the bench see it. The Orchestrator implements it.
 */
import type { Observable } from 'rxjs';
import type { SamplingParams } from './samplingParams.ts';
import type { StageGraph } from './graph.ts';
import type { SerializedError } from './errors.ts';
import type { AudioOutputFacts } from './modelFacts.ts';

/** What an answer may hold (request.modalities); the media a prompt may hold is src/common/modality.ts. */
export type OutputModality = 'text' | 'audio';

/**
 * One part of a message's content, in order. The shapes follow OpenAI's content parts so the front end maps them
 * one to one: `text`; `input_audio` ({data: base64, format}) -> audio with the decoded bytes; `image_url` (a data:
 * URL, or bytes the server fetched from an allowed URL) -> image. Each media part becomes that many embeddings
 * at its place in the prompt (its placeholder expands there); the bytes are decoded in the encoder stage.
 */
export type ContentPart =
  | { readonly type: 'text'; readonly text: string }
  /** wav, or pcm16: mono little-endian 16-bit at sampleRateHz (default 24000, the Realtime API's). */
  | {
      readonly type: 'audio';
      readonly data: Uint8Array;
      readonly format: 'wav' | 'pcm16';
      readonly sampleRateHz?: number;
    }
  /** PNG or JPEG bytes (the format is sniffed from the bytes). */
  | { readonly type: 'image'; readonly data: Uint8Array }
  /**
   * A video as sampled frames (src/media/modalities/video.ts): numFrames RGB frames of width x height, row-major,
   * taken `fps` per second; sourceKey names the source and its sampling (the encoder-output store's key).
   */
  | {
      readonly type: 'video';
      readonly data: Uint8Array;
      readonly numFrames: number;
      readonly width: number;
      readonly height: number;
      readonly fps: number;
      readonly sourceKey: string;
      /** With use_audio_in_video: the clip's audio track, 16 kHz mono pcm16 (heard interleaved with the frames). */
      readonly audio?: Uint8Array;
    };

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  /** Plain text, or parts (text and media, in order). */
  readonly content: string | readonly ContentPart[];
  /** An assistant turn's tool calls (rendered after its content, in the chat template's tool format). */
  readonly toolCalls?: readonly ToolCall[];
  /** A tool turn: the id of the call its content answers. */
  readonly toolCallId?: string;
}

/** A function the model may call, as OpenAI's `tools` entries and Hugging Face chat templates describe it. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** One call in an assistant turn (OpenAI's message.tool_calls entry, its arguments as JSON text). */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/**
 * A grammar the Thinker's sampling follows (src/grammar): the answer is JSON of a schema (its text), any JSON, or an
 * xgrammar structural tag (its JSON text: tool calls in tags, free text between them). Data, not a compiled object:
 * it travels to the Thinker in the request's add args, and the Thinker compiles it (once per schema, cached).
 */
export type GrammarSpec =
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly schema: string }
  | { readonly type: 'structural_tag'; readonly tag: string };

export interface GenerateRequest {
  /** Unique per live request; generated when absent. Must not contain whitespace. */
  readonly requestId?: string;
  /** The conversation; rendered to a prompt by the Thinker's chat template. */
  readonly messages: readonly ChatMessage[];
  /** ['text'] runs the Thinker only; ['text', 'audio'] runs the whole graph. */
  readonly modalities: readonly OutputModality[];
  /** Overrides of the Thinker's default sampling params. */
  readonly sampling?: Partial<SamplingParams>;
  /** Overrides of the Talker's default sampling params (seed, ignoreEos, maxTokens in frames...). */
  readonly talkerSampling?: Partial<SamplingParams>;
  /** Per-request override of the initial codec chunk (frames). */
  readonly initialCodecChunkFrames?: number;
  /**
   * When the first audio packet should be out (ms after admission): picks the chunk schedule under the current
   * load; missed targets are reported (done warnings). Overrides chunk_policy.ttfp_target_ms.
   */
  readonly ttfpTargetMs?: number;
  /** Reuse of the Thinker's work on an earlier prompt (voice turns prefilled while the user speaks). */
  readonly prefix?: PromptPrefix;
  /**
   * The request's cache partition (vLLM's cache_salt; the server folds in the tenant, src/server/cachePartition.ts):
   * requests with different salts never share prefix-cache blocks or encoder outputs, and those without one share
   * the default partition. A non-empty string; the engine sends the stages a digest of it.
   */
  readonly cacheSalt?: string;
  /**
   * W3C trace context of the span this request's stage spans are children of (the front end's root span,
   * src/tracing/responseSpan.ts): sent to every stage in `add`. Absent: the stages record nothing for it. A caller's
   * own (a Realtime response's metadata.traceparent) is the parent of the root span main makes, which then takes its
   * place.
   */
  readonly traceparent?: string;
  /** Constrained decoding: every answer token is one the grammar allows; its end ends the answer (reason stop). */
  readonly grammar?: GrammarSpec;
  /** The functions the chat template shows the model (OpenAI's `tools`; a grammar forces or allows their calls). */
  readonly tools?: readonly ToolDefinition[];
  /**
   * Report each answer token's log probability and this many most likely alternatives' (0-20; OpenAI's logprobs
   * with top_logprobs): the model's raw log-softmax (stages/sampling/logprobs.ts). Absent: nothing is computed.
   */
  readonly logprobs?: number;
}

/**
 * A request with a prefix key (a voice session's) is routed to the Thinker instance that holds the key and waits
 * there while another request of the key is prefilling; like every request it starts from the longest prefix of
 * its prompt in the Thinker's prefix cache (inputs equal, token ids and media rows bit for bit, so reuse never
 * changes an answer). With prefillOnly the request computes its prompt and samples nothing (it ends with no text,
 * reason stop); its KV stays in the cache, owned by the key. Engine.releasePrefix frees the key's entries.
 */
export interface PromptPrefix {
  readonly key: string;
  readonly prefillOnly?: boolean;
}

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'error';

/** A prompt's positions by what fills them: text tokens, and the embeddings of each media modality. */
export interface PromptTokens {
  readonly text: number;
  readonly audio: number;
  readonly image: number;
  readonly video: number;
}

export interface Usage {
  /** Every prompt position (text + audio + image + video); media items left out of the answer do not count. */
  readonly promptTokens: number;
  readonly promptTokenDetails: PromptTokens;
  readonly completionTokens: number;
  /** Prompt positions the Thinker did not compute for this request: taken from its prefix cache. */
  readonly cachedTokens?: number;
  readonly audioFrames: number;
  readonly audioSeconds: number;
}

/** A token as text and UTF-8 bytes (a token inside a multi-byte character: its own bytes; token is lossy). */
export interface TokenText {
  readonly token: string;
  readonly bytes: readonly number[];
  readonly logprob: number;
}

/** An answer token's log probability and its most likely alternatives', best first. */
export interface TextLogprob extends TokenText {
  readonly top: readonly TokenText[];
}

export type OutputEvent =
  /** Text from the Thinker, already detokenized (never a broken character). */
  | {
      readonly type: 'text';
      readonly delta: string;
      readonly tokenIds: readonly number[];
      readonly atMs: number;
      /** With GenerateRequest.logprobs: one per token id. */
      readonly logprobs?: readonly TextLogprob[];
      /**
       * The text each token added, in order (they make up delta), when the delta carries several tokens: what
       * trims a spoken item to a token (conversation.item.truncate).
       */
      readonly tokenTexts?: readonly string[];
    }
  /** Mono PCM in [-1, 1] at sampleRateHz, in order (seq counts audio events from 0). */
  | {
      readonly type: 'audio';
      readonly pcm: Float32Array;
      readonly sampleRateHz: number;
      readonly seq: number;
      readonly atMs: number;
    }
  /** Always the last event. */
  | {
      readonly type: 'done';
      readonly finishReason: FinishReason;
      readonly error?: SerializedError;
      readonly usage: Usage;
      readonly atMs: number;
      /**
       * What the answer left out although the request asked for it, one sentence each: a media item an encoder
       * could not deliver under `on_encoder_failure: text_only`. Absent when there is nothing to say.
       */
      readonly warnings?: readonly string[];
    };

export interface RequestHandle {
  readonly requestId: string;
  /** The prompt as admitted, by modality (usage for a response that ends before the engine reports it). */
  readonly prompt: PromptTokens;
  /**
   * Hot: the first subscriber gets every event from the start; delivered events are not kept, so a later one gets
   * the live events and, if the request already ended, its 'done'. Completes after 'done'.
   */
  readonly events: Observable<OutputEvent>;
  /**
   * The trace id of the answer's root span when it is traced and sampled (src/tracing/responseSpan.ts): the
   * exemplar of its latency observations in /metrics. Absent: not traced.
   */
  readonly traceId?: string;
  /** Ends the request in every stage; the stream ends with done(cancelled). Idempotent. */
  cancel(reason?: string): void;
  /** Holds generation back (a slow client); resume() lets it continue. */
  pause(): void;
  resume(): void;
}

export interface StageHealth {
  readonly stageId: string;
  readonly replica: number;
  /** hung: declared hung (no report, no CPU with work in flight); it is being killed and restarted. */
  /** waiting: a remote stage's instance that has not joined yet (min_replicas). */
  readonly status: 'starting' | 'ready' | 'hung' | 'restarting' | 'failed' | 'stopped' | 'waiting';
  readonly pid: number | null;
  readonly restarts: number;
  readonly inFlight: number;
  /** The instance id ("talker#0", or the name a remote instance joined with). */
  readonly instance?: string;
  /** Remote instances: the host they run on, and when main last heard their heartbeat (epoch ms). */
  readonly host?: string;
  readonly lastHeartbeatMs?: number;
  /**
   * Starting or restarting: when it should be ready again (ms from now), from how long its last start took; absent
   * when there is nothing to go by (its first start). What a 503's Retry-After is computed from.
   */
  readonly readyInMs?: number;
}

/** The engine's estimate for a request admitted now, in ms from its admission (admission on latency). */
export interface FirstOutputEstimate {
  /** Waiting in the Thinker's queue before its own prefill starts. */
  readonly queueMs: number;
  /** To its first text token. */
  readonly ttftMs: number;
  /** To its first audio packet; null until a request has had audio (the text estimate stands in). */
  readonly ttfpMs: number | null;
  /**
   * What requests admitted alone lately took to their first text and first audio (median; null until measured):
   * the base of admission's measured default bound (src/server/admission/measuredSlo.ts).
   */
  readonly aloneMs?: { readonly ttft: number | null; readonly ttfp: number | null };
  /**
   * Whether spoken answers keep up with playback: how long the slowest frame-making stage (an autoregressive stage
   * after the entry, the Talker: one frame per request a step) takes a step now, against how long a frame plays
   * (admissionDecision.ts). Absent: no audio, or nothing measured.
   */
  readonly audioPace?: { readonly stepMs: number; readonly frameMs: number };
}

export interface Engine {
  readonly graph: StageGraph;
  /**
   * The tag on its stage instances' diagnostics reports (newEngineId in src/common/diagnostics.ts): a server counts
   * the reports of its engine only. Absent: the engine's reports are untagged (test doubles).
   */
  readonly id?: string;
  /** The audio the pipeline returns, as its vocoder reported at start-up; null when it has none. */
  readonly audioOutput: AudioOutputFacts | null;
  generate(request: GenerateRequest): RequestHandle;
  /**
   * The Thinker positions a prompt of `messages` takes, built as generate() builds it (chat template, each media item
   * expanded to its embeddings): a front end fits a conversation to the Thinker with it (Realtime truncation).
   * Throws what generate() would for a bad media item. Absent: the engine cannot count (test doubles).
   */
  promptPositions?(messages: readonly ChatMessage[]): number;
  /**
   * When a request admitted now would start and first answer (src/server/admission/admissionDecision.ts), for
   * admission on latency. null: nothing to go by (nothing measured yet, or the engine is idle, when a request
   * starts at once). Absent: the engine cannot estimate (test doubles).
   */
  firstOutputEstimate?(): FirstOutputEstimate | null;
  /** Frees the Thinker's prefix-cache entries owned by a key (GenerateRequest.prefix); unknown keys are ignored. */
  releasePrefix?(key: string): void;
  health(): readonly StageHealth[];
  /** Drains in-flight requests (up to timeoutMs), then stops every stage process and unlinks shared memory. */
  close(timeoutMs?: number): Promise<void>;
}
