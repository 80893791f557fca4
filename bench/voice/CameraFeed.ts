/**
 * A camera during a voice turn (bench/video/cameraVoice.ts): JPEG frames sent as `input_image` items, one every
 * 1 / fps seconds, from CAMERA_LEAD_MS before the speech starts until the turn ends, as the playground's camera button
 * sends them. Every frame is its own picture (seeded by the turn's noise seed, unique over the run), so the image
 * encoder's cache never answers for one and none is a near-duplicate; they are encoded before the turn starts, so the
 * client's JPEG encoder never delays an audio chunk.
 */
import jpeg from 'jpeg-js';

/** The camera is on this long before the user starts to speak. */
export const CAMERA_LEAD_MS = 2000;
const FRAME_WIDTH = 320;
const FRAME_HEIGHT = 240;
/** Frames made per turn: the lead, the speech, the silence and the answer fit in it at 1 fps; then they repeat. */
const FRAMES_PER_TURN = 12;

interface FrameSink {
  readonly finished: boolean;
  send(event: object): void;
}

export class CameraFeed {
  #timer: NodeJS.Timeout | null = null;
  #sent = 0;

  private constructor(
    private readonly session: FrameSink,
    private readonly frames: readonly string[],
    private readonly startedMs: number,
  ) {}

  static start(session: FrameSink, fps: number, seed: number): CameraFeed {
    const frames = Array.from({ length: FRAMES_PER_TURN }, (_, i) =>
      Buffer.from(picture(seed * FRAMES_PER_TURN + i)).toString('base64'),
    );
    const feed = new CameraFeed(session, frames, performance.now());
    feed.#send();
    feed.#timer = setInterval(() => feed.#send(), 1000 / fps);
    return feed;
  }

  /** Resolves once the camera has been on for CAMERA_LEAD_MS: the speech starts then. */
  lead(): Promise<void> {
    const due = this.startedMs + CAMERA_LEAD_MS - performance.now();
    return due > 0 ? new Promise((r) => setTimeout(r, due)) : Promise.resolve();
  }

  get sent(): number {
    return this.#sent;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #send(): void {
    if (this.session.finished) return this.stop();
    const image = this.frames[this.#sent % this.frames.length];
    this.#sent++;
    this.session.send({
      type: 'conversation.item.create',
      item: {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_image', image_url: `data:image/jpeg;base64,${image}` }],
      },
    });
  }
}

/**
 * A frame: 40 x 40 px blocks of seeded colours with a fine texture over them. A scene of its own each time: the
 * blocks make thumbnails differ (a texture alone averages to the same grey in a 16 x 16 thumbnail), the texture gives
 * the JPEG a camera picture's detail.
 */
function picture(seed: number): Uint8Array {
  const data = Buffer.alloc(FRAME_WIDTH * FRAME_HEIGHT * 4);
  let state = (seed * 2654435761) >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % 256;
  };
  const blocks = Array.from({ length: Math.ceil(FRAME_WIDTH / 40) * Math.ceil(FRAME_HEIGHT / 40) }, () => [
    next(),
    next(),
    next(),
  ]);
  const perRow = Math.ceil(FRAME_WIDTH / 40);
  for (let y = 0; y < FRAME_HEIGHT; y++)
    for (let x = 0; x < FRAME_WIDTH; x++) {
      const block = blocks[Math.floor(y / 40) * perRow + Math.floor(x / 40)];
      const texture = ((x * 7 + y * 13) % 32) - 16;
      const at = (y * FRAME_WIDTH + x) * 4;
      for (let c = 0; c < 3; c++) data[at + c] = Math.max(0, Math.min(255, block[c] + texture));
      data[at + 3] = 255;
    }
  return new Uint8Array(jpeg.encode({ data, width: FRAME_WIDTH, height: FRAME_HEIGHT }, 85).data);
}
