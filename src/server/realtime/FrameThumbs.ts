/**
 * Thumbnails of camera frames, made in a worker thread (frameThumbWorker.mjs) so that decoding a frame never costs
 * main's event loop (a 640 x 480 JPEG took the pure-JS decoder ~70 ms here). One worker for the server, started with
 * the first frame; frames queue in it. A frame that does not decode, or a worker that died, gives null: the caller
 * keeps the frame (whether it decodes is the encoder's to say, with the error a bad image gets).
 */
import { Worker } from 'node:worker_threads';
import { shippedAsset } from '../../common/moduleFile.ts';
import { MAX_DECODED_PIXELS } from '../../media/image.ts';

/** A thumbnail is THUMB_SIDE x THUMB_SIDE box-averaged luma values (0-255). */
export const THUMB_SIDE = 16;

const WORKER_URL = shippedAsset('./frameThumbWorker.mjs', import.meta.url);

export class FrameThumbs {
  /**
   * `niceIncrement`: nice levels the worker's thread runs below main (the stages' stage_nice): a thumbnail only decides
   * whether a frame is kept, so it must not take the CPU from the stages making an answer's audio (main's threads run
   * at the server's priority, above them).
   */
  constructor(private readonly niceIncrement: () => number = () => 0) {}

  #worker: Worker | null = null;
  #nextId = 0;
  readonly #pending = new Map<number, (thumb: Uint8Array | null) => void>();

  /** The frame's thumbnail, or null when it could not be made. */
  of(bytes: Uint8Array): Promise<Uint8Array | null> {
    const worker = (this.#worker ??= this.#start());
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      if (this.#pending.size === 1) worker.ref(); // keeps the process up while a thumbnail is owed
      worker.postMessage({ id, bytes });
    });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    await worker?.terminate();
  }

  #start(): Worker {
    const worker = new Worker(WORKER_URL, {
      name: 'chorus-frame-thumbs',
      workerData: { side: THUMB_SIDE, maxPixels: MAX_DECODED_PIXELS, nice: this.niceIncrement() },
    });
    worker.unref();
    worker.on('message', (msg: { id: number; thumb: Uint8Array | null }) => {
      const resolve = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      if (this.#pending.size === 0) worker.unref();
      resolve?.(msg.thumb);
    });
    // A worker that dies fails nothing: what it owed resolves null (frames kept); the next frame starts another.
    const fail = () => {
      if (this.#worker === worker) this.#worker = null;
      for (const resolve of this.#pending.values()) resolve(null);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    return worker;
  }
}

/** How far apart two thumbnails are: the mean absolute luma difference as a fraction of full scale (0-1). */
export function thumbDistance(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return sum / (a.length * 255);
}
