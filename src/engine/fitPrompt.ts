/**
 * A prompt whose clips do not fit, served with fewer or smaller frames instead of refused (issue 44 item 7,
 * src/media/video/videoFallback.ts): when the prompt is over the Thinker's positions, a clip over the edge to its
 * encoder, a clip over its encoder's patches per encode (encoder.video.max_patches_per_encode: its working memory), or
 * the media rows over the Thinker's budget (engine.media_rows_bytes), every clip of the request steps down
 * once under its encoder stage's `encoder.video.fallback`, and the prompt is built again; at the floor the last
 * refusal stands, saying the fallback's floor was reached. What was reduced is said in the answer's warnings
 * (chat: `chorus_warnings`; Realtime: `response.done`'s `chorus_warnings`), naming each clip, its frames before and
 * after, and the limit that asked for it.
 */
import type { ChatMessage, ContentPart } from '../common/engine.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { VideoFallbackSettings } from '../common/encoderSettings.ts';
import { nextStep, reducedVideo, type FallbackStep } from '../media/video/videoFallback.ts';
import { videoGridOf } from '../media/modalities/video.ts';
import { clipPatches } from '../media/video/encodeMemory.ts';
import type { VideoGridConfig } from '../media/video/videoGrid.ts';
import { MediaItemTooLarge, type PreparedPrompt, type PromptContext } from './mediaPrompt.ts';

type VideoPart = Extract<ContentPart, { readonly type: 'video' }>;

export interface FitPolicy {
  readonly fallback: VideoFallbackSettings | null;
  /** Frame sides stay multiples of this (patch x merge: 28 px). */
  readonly cell: number;
  /** Patches of one clip's encode at most, and the grid that counts them; null: no video encoder. */
  readonly encode: { readonly maxPatches: number; readonly grid: VideoGridConfig } | null;
}

export interface FittedPrompt {
  readonly prompt: PreparedPrompt;
  /** The messages the prompt was built from (its clips as served: a re-encode steps down from them). */
  readonly messages: readonly ChatMessage[];
  /** One per clip served with fewer or smaller frames. */
  readonly warnings: readonly string[];
}

/**
 * Builds the prompt (`build` throws what does not fit), stepping the clips down while `overBudget` names a limit
 * passed or `build` refuses for size. A prompt still over budget at the floor is returned as it is: the admission's
 * own check refuses it, as without a fallback.
 */
export function fitPrompt(
  messages: readonly ChatMessage[],
  build: (messages: readonly ChatMessage[]) => PreparedPrompt,
  overBudget: (prompt: PreparedPrompt) => string | null,
  policy: FitPolicy,
): FittedPrompt {
  let current = messages;
  const limits = new Set<string>(); // every limit that asked for a step, named in the warnings
  for (;;) {
    let prompt: PreparedPrompt | null = null;
    let refusal: ChorusError | null = null;
    try {
      prompt = build(current);
    } catch (err) {
      if (!isSizeRefusal(err)) throw err;
      refusal = err;
    }
    const patches = prompt ? clipOverPatches(current, policy) : null;
    const over = prompt ? (patches?.limit ?? overBudget(prompt)) : (refusal?.message ?? null);
    const reason = () => [...limits].join(' and ');
    if (over === null) {
      const warnings = limits.size ? warningsOf(messages, current, reason()) : [];
      return { prompt: prompt!, messages: current, warnings };
    }
    limits.add(prompt ? over : limitOf(refusal!));
    const next = policy.fallback ? stepDown(current, policy.fallback, policy.cell) : null;
    if (!next) {
      // Nothing else refuses a clip over its encode's patches: it would be encoded at any cost.
      if (patches)
        throw new ChorusError(ErrorCodes.MEDIA_INVALID, floorSaid(patches.clip, policy, current !== messages));
      if (refusal && policy.fallback && current !== messages) throw atFloor(refusal);
      if (refusal) throw refusal;
      const warnings = current === messages ? [] : warningsOf(messages, current, reason());
      return { prompt: prompt!, messages: current, warnings };
    }
    current = next;
  }
}

/** The video encoder stage's fallback, and its cell (patch x merge), from a prompt context. */
export function videoFitPolicy(ctx: PromptContext): FitPolicy {
  const settings = ctx.encoders.get('video')?.encoder;
  const grid = settings ? videoGridOf(settings) : null;
  const maxPatches = settings?.video?.maxPatchesPerEncode;
  return {
    fallback: settings?.video?.fallback ?? null,
    cell: grid ? grid.patchSize * grid.mergeSize : 28,
    encode: grid && maxPatches ? { maxPatches, grid } : null,
  };
}

/** The limit passed and the first clip over its encode's patches; null when every clip fits. */
function clipOverPatches(
  messages: readonly ChatMessage[],
  policy: FitPolicy,
): { readonly limit: string; readonly clip: string } | null {
  if (!policy.encode) return null;
  const { maxPatches, grid } = policy.encode;
  for (const [i, m] of messages.entries()) {
    if (typeof m.content === 'string') continue;
    for (const [j, part] of m.content.entries()) {
      if (part.type !== 'video') continue;
      const patches = clipPatches(part, grid);
      if (patches > maxPatches) {
        const limit = `the encoder's patches per encode (encoder.video.max_patches_per_encode: ${maxPatches})`;
        return { limit, clip: `${limit}: messages[${i}].content[${j}] (video) is ${patches} patches` };
      }
    }
  }
  return null;
}

function floorSaid(limit: string, policy: FitPolicy, stepped: boolean): string {
  let why = '';
  if (!policy.fallback) why = ' (encoder.video.fallback is off)';
  else if (stepped) why = " even with its clips at the fallback's floor (encoder.video.fallback)";
  return `a video is over ${limit}${why}: ask a lower fps or max_frames, or raise max_patches_per_encode`;
}

function isSizeRefusal(err: unknown): err is ChorusError {
  return (
    err instanceof MediaItemTooLarge || (err instanceof ChorusError && err.code === ErrorCodes.CONTEXT_LENGTH_EXCEEDED)
  );
}

function limitOf(err: ChorusError): string {
  return err instanceof MediaItemTooLarge
    ? "the edge to its encoder (the connector's ring_bytes)"
    : "the Thinker's positions";
}

function atFloor(err: ChorusError): ChorusError {
  const message = `${err.message} (even with its clips at the fallback's floor: encoder.video.fallback)`;
  return err instanceof MediaItemTooLarge ? new MediaItemTooLarge(message) : new ChorusError(err.code, message);
}

/** Every clip one step down; null when none can step (all at the floor, or no clip). */
function stepDown(
  messages: readonly ChatMessage[],
  fallback: VideoFallbackSettings,
  cell: number,
): ChatMessage[] | null {
  let stepped = false;
  const out = messages.map((m) => {
    if (typeof m.content === 'string') return m;
    const content = m.content.map((part) => {
      if (part.type !== 'video') return part;
      const next = nextStep(part, fallback, cell);
      if (!next) return part;
      stepped = true;
      return reducedVideo(part, next);
    });
    return { ...m, content };
  });
  return stepped ? out : null;
}

function warningsOf(before: readonly ChatMessage[], after: readonly ChatMessage[], reason: string): string[] {
  const warnings: string[] = [];
  before.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((part, j) => {
      const now = (after[i].content as readonly ContentPart[])[j];
      if (part.type !== 'video' || now === part) return;
      warnings.push(
        `messages[${i}].content[${j}] (video) was served with ${framesOf(now as VideoPart)} instead of ` +
          `${framesOf(part)} to fit ${reason} (encoder.video.fallback)`,
      );
    });
  });
  return warnings;
}

function framesOf(p: FallbackStep): string {
  return `${p.numFrames} frames of ${p.width}x${p.height}`;
}
