/**
 * The camera frames of one Realtime session. A frame is a user message whose content is one `input_image` and
 * nothing else (what a client with its camera on sends, about once a second); an image with text beside it is a
 * message like any other and is kept as one. Each frame is in the conversation (announced) as soon as it arrives;
 * then, once its thumbnail is made off the event loop (FrameThumbs):
 *
 * - a near-duplicate of the last frame kept (thumbDistance under `duplicateThreshold`) is skipped: its item is
 *   deleted, with conversation.item.deleted, before anything encodes it;
 * - a frame kept joins the window; past `maxFrames` the oldest frames' items are deleted the same way (their bytes
 *   leave the session's media budget), and the frame is handed on to be prefilled.
 *
 * Frames are judged in the order they arrived (the worker answers in order), so the window's order is the camera's.
 */
import type { CameraSettings } from '../../common/realtimeSettings.ts';
import type { ClientEvent } from './clientEvents.ts';
import type { StoredItem } from './Conversation.ts';
import { thumbDistance, type FrameThumbs } from './FrameThumbs.ts';

export interface CameraHooks {
  /** The item is still in the conversation (the client may delete a frame while its thumbnail is made). */
  has(itemId: string): boolean;
  /** Deletes a frame's item and tells the client (conversation.item.deleted). */
  drop(itemId: string): void;
  /** A frame was kept: encode and prefill it now. */
  kept(itemId: string): void;
}

/** A user message of exactly one input_image: a camera frame. */
export function isCameraFrame(item: StoredItem): boolean {
  return item.role === 'user' && !item.call && item.parts.length === 1 && item.parts[0].type === 'input_image';
}

export class CameraFrames {
  /** Frames kept, oldest first. */
  readonly #window: string[] = [];
  #last: { readonly itemId: string; readonly thumb: Uint8Array } | null = null;
  #skipped = 0;
  #closed = false;

  constructor(
    private readonly settings: CameraSettings,
    private readonly thumbs: FrameThumbs,
    private readonly hooks: CameraHooks,
  ) {}

  /** Frames skipped as near-duplicates so far. */
  get skipped(): number {
    return this.#skipped;
  }

  /** The frames kept now, oldest first. */
  get frames(): readonly string[] {
    return this.#window.filter((id) => this.hooks.has(id));
  }

  /** A frame item was added to the conversation: judge it (resolves once it is kept or skipped). */
  async arrived(item: StoredItem): Promise<void> {
    const media = item.parts[0].media;
    const thumb = media ? await this.thumbs.of(media.data) : null;
    if (this.#closed || !this.hooks.has(item.id)) return;
    const last = this.#last && this.hooks.has(this.#last.itemId) ? this.#last : null;
    const { duplicateThreshold, maxFrames } = this.settings;
    if (thumb && last && duplicateThreshold > 0 && thumbDistance(thumb, last.thumb) < duplicateThreshold) {
      this.#skipped++;
      return this.hooks.drop(item.id);
    }
    if (thumb) this.#last = { itemId: item.id, thumb };
    // Frames the client deleted meanwhile no longer count.
    const window = this.#window.filter((id) => this.hooks.has(id));
    window.push(item.id);
    this.#window.splice(0, this.#window.length, ...window);
    while (this.#window.length > maxFrames) this.hooks.drop(this.#window.shift()!);
    this.hooks.kept(item.id);
  }

  close(): void {
    this.#closed = true;
  }
}

/** The client event that creates a camera frame (isCameraFrame's shape, before it is stored). */
export function isFrameEvent(event: ClientEvent): boolean {
  if (event.type !== 'conversation.item.create' || event.item.type !== 'message') return false;
  const { role, content } = event.item;
  return role === 'user' && content.length === 1 && content[0].type === 'input_image';
}
