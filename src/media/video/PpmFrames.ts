/**
 * Reads the frames a child ffmpeg writes as `-f image2pipe -c:v ppm`: each frame is a binary PPM ("P6\n<w> <h>\n255\n"
 * then w * h * 3 bytes of RGB), so the stream says its own frame size and no one has to predict what the scale filter
 * chose. Bytes arrive in arbitrary pieces; a frame is handed out once it is whole.
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';

export interface RgbFrame {
  readonly width: number;
  readonly height: number;
  /** [height][width][3] */
  readonly data: Uint8Array;
}

const HEADER = /^P6\s+(\d+)\s+(\d+)\s+255\s/;
/** A PPM header is short; more than this without one means the stream is not what we asked ffmpeg for. */
const MAX_HEADER_BYTES = 64;

export class PpmFrames {
  #pending: Buffer = Buffer.alloc(0);
  #frame: { width: number; height: number; data: Uint8Array; filled: number } | null = null;

  /** Feeds bytes; returns the frames they completed, in order. */
  push(chunk: Buffer): RgbFrame[] {
    const out: RgbFrame[] = [];
    let at = 0;
    const buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    this.#pending = Buffer.alloc(0);
    while (at < buf.length) {
      if (this.#frame === null) {
        const head = buf.subarray(at, at + MAX_HEADER_BYTES).toString('latin1');
        const m = HEADER.exec(head);
        if (!m) {
          if (buf.length - at < MAX_HEADER_BYTES) {
            this.#pending = Buffer.from(buf.subarray(at)); // a header split across chunks
            return out;
          }
          throw new ChorusError(ErrorCodes.INTERNAL, 'the video decoder wrote something other than PPM frames');
        }
        const width = Number(m[1]);
        const height = Number(m[2]);
        this.#frame = { width, height, data: new Uint8Array(width * height * 3), filled: 0 };
        at += m[0].length;
        continue;
      }
      const f = this.#frame;
      const take = Math.min(f.data.length - f.filled, buf.length - at);
      f.data.set(buf.subarray(at, at + take), f.filled);
      f.filled += take;
      at += take;
      if (f.filled === f.data.length) {
        out.push({ width: f.width, height: f.height, data: f.data });
        this.#frame = null;
      }
    }
    return out;
  }

  /** True when the stream ended between frames (a cut-off frame is a decoder failure). */
  get atBoundary(): boolean {
    return this.#frame === null && this.#pending.length === 0;
  }
}
