/**
 * A request's messages -> the Thinker's prompt and its media items, on the server thread, before admission.
 * Each media part becomes one placeholder token (<|audio|> / <|image|> / <|video|>) at its place in the chat template,
 * which the position map expands to the item's embedding count. That count comes from its modality's `layout`
 * (src/media/modalities: a header, or a video's sampled grid): decoding runs in the encoder stage (a video's sampling
 * ran in a child process before the request got here), so this costs microseconds per item. Anything wrong with an
 * item is a CHORUS_ERR_MEDIA_INVALID naming it ("messages[0].content[1] (audio): ...") before anything is admitted.
 */
import { encodersOf, type StageGraph, type StageSpec } from '../common/graph.ts';
import type { EncoderSettings, MediaModality } from '../common/encoderSettings.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { mediaInvalid } from '../media/mediaError.ts';
import { MODALITIES, modalityOf, placeholderSpellings, type MediaPart } from '../media/modalities/index.ts';
import type { MediaGrid } from '../common/modality.ts';
import type { InterleaveTiming } from '../media/video/interleave.ts';
import { buildPositionMap, type MediaSpan } from '../media/positionMap.ts';
import { ByteTokenizer } from '../tokenizer/ByteTokenizer.ts';
import { HfTokenizer } from '../tokenizer/HfTokenizer.ts';
import type { ChatPiece, ChatTurn, Tokenizer } from '../tokenizer/Tokenizer.ts';
import { createTokenizer } from '../tokenizer/index.ts';
import {
  BYTES_PER_POSITION,
  boundPositions,
  checkPromptBytes,
  promptByteLimit,
  textBytes,
} from '../common/promptBytes.ts';

export type { Tokenizer };
import type { ChatMessage, ToolDefinition } from '../common/engine.ts';
import { encoderConnector } from '../common/edgeConnectors.ts';
import { DEFAULT_RING_BYTES, ringBytesOf } from '../../transport/registry.ts';
import { entryPromptLimits } from '../../stages/registry.ts';

export interface MediaItem {
  readonly index: number;
  readonly modality: MediaModality;
  readonly part: MediaPart;
  readonly what: string;
  readonly numEmbeddings: number;
  /** A video's time x height x width grid. */
  readonly grid?: MediaGrid;
  /** A video heard with its audio track: the next item is the track, interleaved with it (positionMap.ts). */
  readonly audioTrack?: { readonly secondsPerGroup: number; readonly timing: InterleaveTiming };
  /** The audio track of video item `trackOf`: it shares that item's placeholder. */
  readonly trackOf?: number;
  /** The encoder stage that takes it. */
  readonly encoder: StageSpec;
  /** The request's cache partition (promptPartition.ts): the EC store looks the item up within it. */
  readonly cacheSalt?: string;
}

export interface PreparedPrompt {
  /** The prompt with each placeholder expanded to its item's embedding count. */
  readonly promptTokenIds: readonly number[];
  readonly items: readonly MediaItem[];
  readonly spans: readonly MediaSpan[];
  /**
   * The digest of the request's cache salt (promptPartition.ts): its blocks and media are named within it. Absent:
   * the default partition.
   */
  readonly cacheSalt?: string;
}

/** Placeholder token ids of a tokenizer, or null when it has none for a modality. */
export type PlaceholderIds = Readonly<Record<MediaModality, number | null>>;

export function placeholderIds(tokenizer: Tokenizer): PlaceholderIds {
  // Looked up, not encoded: encoding text a vocabulary lacks may be refused (a tokenizer without unk_token).
  const find = (m: MediaModality): number | null => {
    const spellings = placeholderSpellings(m);
    if (tokenizer instanceof ByteTokenizer) return tokenizer.specialTokenId(spellings.byte);
    if (!(tokenizer instanceof HfTokenizer)) return null;
    for (const name of spellings.hf) {
      const id = tokenizer.specialTokenId(name);
      if (id !== null) return id;
    }
    return null;
  };
  return Object.fromEntries(MODALITIES.map((m) => [m, find(m)])) as Record<MediaModality, number | null>;
}

/** The tokenizer of the entry stage's model (the Thinker's): main renders and counts prompts with it. */
export function entryTokenizer(graph: StageGraph): Tokenizer {
  const { model } = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
  return createTokenizer(model, entryPromptLimits(graph).vocabSize);
}

/**
 * The Thinker positions a prompt of `messages` takes, built as admission builds it (Engine.promptPositions). Text
 * over the byte bound cannot fit: more positions than the Thinker has, said without tokenizing it here.
 */
export function promptPositionsOf(messages: readonly ChatMessage[], graph: StageGraph, ctx: PromptContext): number {
  const bytes = textBytes(messages);
  if (bytes > promptByteLimit(boundPositions(entryPromptLimits(graph).maxPositions)))
    return Math.ceil(bytes / BYTES_PER_POSITION);
  return preparePrompt(messages, ctx).promptTokenIds.length;
}

/** What preparePrompt needs of a pipeline: its tokenizer's placeholders, its encoders, the largest item. */
export function promptContextOf(graph: StageGraph, tokenizer: Tokenizer): PromptContext {
  const encoders = encodersOf(graph);
  // An item travels to its encoder as one frame: it must fit the smallest ring it may cross, with room to spare.
  const ringBytes = [...encoders.values()].map((e) => ringBytesOf(graph.connectors[encoderConnector(graph, e)]));
  const maxItemBytes = Math.floor(Math.min(DEFAULT_RING_BYTES, ...ringBytes) / 2);
  return { tokenizer, placeholders: placeholderIds(tokenizer), encoders, maxItemBytes };
}

export interface PromptContext {
  readonly tokenizer: Tokenizer;
  readonly placeholders: PlaceholderIds;
  readonly encoders: ReadonlyMap<MediaModality, StageSpec>;
  /** Largest media item in bytes: it travels to its encoder as one frame through that edge's ring. */
  readonly maxItemBytes: number;
}

export function preparePrompt(
  messages: readonly ChatMessage[],
  ctx: PromptContext,
  tools?: readonly ToolDefinition[],
): PreparedPrompt {
  if (messages.every((m) => typeof m.content === 'string')) {
    const ids = ctx.tokenizer.applyChatTemplate(messages as readonly ChatTurn[], tools);
    return { promptTokenIds: ids, items: [], spans: [] };
  }
  const items: MediaItem[] = [];
  const turns: ChatTurn[] = messages.map((m, i) => {
    if (typeof m.content === 'string') return { ...m, content: m.content };
    const pieces: ChatPiece[] = m.content.map((part, j) => {
      if (part.type === 'text') return part.text;
      const item = probeItem(part, items.length, `messages[${i}].content[${j}] (${part.type})`, ctx);
      items.push(...item);
      return { tokenId: ctx.placeholders[item[0].modality]! };
    });
    return { ...m, content: pieces };
  });
  const ids = ctx.tokenizer.applyChatTemplate(turns, tools);
  const placeholderModality = new Map<number, MediaModality>();
  for (const modality of MODALITIES) {
    const id = ctx.placeholders[modality];
    if (id !== null) placeholderModality.set(id, modality);
  }
  // Throws REQUEST_INVALID if text typed a placeholder token (possible with a Hugging Face tokenizer only).
  const map = buildPositionMap(ids, placeholderModality, items);
  return { promptTokenIds: map.tokenIds, items, spans: map.spans };
}

/** The prompt of an admission, refused (a 400 before any stream starts) when it cannot fit or an item is bad. */
export function admissiblePrompt(
  messages: readonly ChatMessage[],
  graph: StageGraph,
  ctx: PromptContext,
  tools?: readonly ToolDefinition[],
): PreparedPrompt {
  // Before tokenizing (on this event loop): text that cannot fit is refused without the work.
  checkPromptBytes(messages, boundPositions(entryPromptLimits(graph).maxPositions));
  // Media items are probed here (headers only) and refused before anything is admitted.
  const prompt = preparePrompt(messages, ctx, tools);
  checkPromptFits(prompt, graph);
  return prompt;
}

/**
 * A prompt longer than the Thinker's positions is refused before admission (a 400 before any stream starts, not an
 * error from the Thinker mid-stream), naming what made it long.
 */
export function checkPromptFits(prompt: PreparedPrompt, graph: StageGraph): void {
  const maxPositions = entryPromptLimits(graph).maxPositions ?? Number.MAX_SAFE_INTEGER;
  if (prompt.promptTokenIds.length < maxPositions) return;
  if (prompt.items.length === 0) {
    throw new ChorusError(
      ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
      `the prompt is ${prompt.promptTokenIds.length} tokens; the thinker has ${maxPositions} positions: send ` +
        `shorter or fewer messages`,
    );
  }
  const media = prompt.items.reduce((n, i) => n + i.numEmbeddings, 0);
  throw new ChorusError(
    ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
    `the prompt takes ${prompt.promptTokenIds.length} positions (${media} of them for ${prompt.items.length} media ` +
      `item(s): ${prompt.items.map((i) => `${i.what} ${i.numEmbeddings}`).join(', ')}); the thinker has ` +
      `${maxPositions}: send shorter audio or video, or fewer images`,
  );
}

/** The item of a part, and its audio track's when it is a video heard with its track (it follows the video). */
function probeItem(part: MediaPart, index: number, what: string, ctx: PromptContext): MediaItem[] {
  const encoder = encoderOf(part, what, ctx);
  const layout = modalityOf(part).layout(part, encoder.encoder as EncoderSettings, what);
  const item: MediaItem = {
    index,
    modality: part.type,
    part,
    what,
    numEmbeddings: layout.numEmbeddings,
    ...(layout.grid ? { grid: layout.grid } : {}),
    encoder,
  };
  if (!layout.audioTrack) return [item];
  const { part: track, secondsPerGroup, timing } = layout.audioTrack;
  const trackWhat = `${what}'s audio track`;
  const trackEncoder = encoderOf(track, trackWhat, ctx);
  const trackLayout = modalityOf(track).layout(track, trackEncoder.encoder as EncoderSettings, trackWhat);
  return [
    { ...item, audioTrack: { secondsPerGroup, timing } },
    {
      index: index + 1,
      modality: 'audio',
      part: track,
      what: trackWhat,
      numEmbeddings: trackLayout.numEmbeddings,
      encoder: trackEncoder,
      trackOf: index,
    },
  ];
}

/** The encoder stage of a part's modality, once the part is known to fit the way to it. */
function encoderOf(part: MediaPart, what: string, ctx: PromptContext): StageSpec {
  const modality: MediaModality = part.type;
  const encoder = ctx.encoders.get(modality);
  if (!encoder)
    throw mediaInvalid(
      what,
      `this pipeline has no ${modality} encoder (add an encoder stage with modality ${modality} to the config, ` +
        `e.g. configs/tiny-omni.yaml)`,
    );
  if (ctx.placeholders[modality] === null) {
    throw new ChorusError(
      ErrorCodes.MEDIA_INVALID,
      `${what}: the thinker's tokenizer has no ${modality} placeholder token ` +
        `(${placeholderSpellings(modality).hf.join(', ')}), so media cannot be placed in its prompt`,
    );
  }
  if (part.data.byteLength > ctx.maxItemBytes) {
    const fewer = modality === 'video' ? ', or sample fewer frames' : '';
    throw new MediaItemTooLarge(
      `${what}: ${size(part.data.byteLength)} is over the ${size(ctx.maxItemBytes)} limit per item (half the edge ` +
        `ring to the encoder: raise the connector's ring_bytes${fewer})`,
    );
  }
  return encoder;
}

/** An item over what the edge to its encoder carries (a clip's fallback may make it fit: fitPrompt.ts). */
export class MediaItemTooLarge extends ChorusError {
  constructor(message: string) {
    super(ErrorCodes.MEDIA_INVALID, message);
  }
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1048576 ? `${Math.round(bytes / 1024)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}
