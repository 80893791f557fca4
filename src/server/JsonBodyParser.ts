/**
 * JSON request bodies, read and parsed where they cost main's event loop little: a body under OFF_LOOP_JSON_BYTES
 * inline (fastify's own parser), a larger one streamed chunk by chunk to a worker thread that gathers and parses it.
 * Gathered and parsed on main, a 15 MiB chat body took the loop 100-600 ms (copy, decode, JSON.parse, garbage) before
 * any check could refuse it, stalling every stream; now main passes chunks on and takes the parsed value back.
 * One worker, started with the first large body; bodies queue in it.
 */
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { errorCodes, type FastifyInstance } from 'fastify';
import { shippedAsset } from '../common/moduleFile.ts';

/** Below this a thread hop costs more than parsing inline (JSON.parse of 1 MiB: ~3 ms). */
export const OFF_LOOP_JSON_BYTES = 1024 * 1024;

const WORKER_URL = shippedAsset('./jsonParseWorker.mjs', import.meta.url);

/**
 * A body over the limit is read to its end and dropped before its 413 is sent, up to this many bytes more: a server
 * that answered at once and closed would leave the client writing into a closed connection (EPIPE, or a reset that
 * loses the answer: seen with a 16 MiB body from Node's fetch). Beyond it the answer goes out and the connection
 * closes (a client sending that much after the limit is not waiting for an answer).
 */
export const MAX_DISCARDED_BYTES = 64 * 1024 * 1024;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

/** The worker, and the bodies it owes a value for. */
export class JsonWorker {
  #worker: Worker | null = null;
  #nextId = 0;
  readonly #pending = new Map<number, Pending>();

  /** A body in the making: send() its chunks, then end() for its value (or abort()). */
  begin(): { send(chunk: Buffer): void; end(): Promise<unknown>; abort(): void } {
    const worker = (this.#worker ??= this.#start());
    const id = this.#nextId++;
    return {
      send: (chunk) => worker.postMessage({ id, chunk }),
      abort: () => worker.postMessage({ id, abort: true }),
      end: () =>
        new Promise((resolve, reject) => {
          this.#pending.set(id, { resolve, reject });
          if (this.#pending.size === 1) worker.ref(); // keeps the process up while a value is owed
          worker.postMessage({ id, end: true });
        }),
    };
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    await worker?.terminate();
  }

  #start(): Worker {
    const worker = new Worker(WORKER_URL, { name: 'chorus-json' });
    worker.unref();
    worker.on('message', (msg: { id: number; ok: boolean; value?: unknown }) => {
      const pending = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      if (this.#pending.size === 0) worker.unref();
      if (msg.ok) pending?.resolve(msg.value);
      else pending?.reject(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY());
    });
    // A worker that dies (out of memory on a hostile body) fails what it owed; the next large body starts another.
    const fail = (err: Error) => {
      if (this.#worker === worker) this.#worker = null;
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the JSON parse worker exited (${code})`)));
    return worker;
  }
}

type Done = (err: Error | null, body?: unknown) => void;

/**
 * Reads one body: held here while it stays small, passed to the worker from the chunk that takes it past
 * OFF_LOOP_JSON_BYTES. The body limit is enforced as fastify's own reader does (this parser reads the raw stream).
 */
function readBody(payload: Readable, contentLength: number, limit: number, json: JsonWorker, inline: Done, done: Done) {
  if (contentLength > limit) return refuseWhenRead(payload, done);
  const held: Buffer[] = [];
  let received = 0;
  let offLoop: ReturnType<JsonWorker['begin']> | null = null;
  const stop = () => {
    payload.off('data', onData);
    payload.off('end', onEnd);
    payload.off('error', onError);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) {
      stop();
      offLoop?.abort();
      return refuseWhenRead(payload, done);
    }
    if (offLoop) return offLoop.send(chunk);
    held.push(chunk);
    if (received < OFF_LOOP_JSON_BYTES) return;
    offLoop = json.begin();
    for (const h of held.splice(0)) offLoop.send(h);
  };
  const onEnd = () => {
    stop();
    if (!Number.isNaN(contentLength) && received !== contentLength) {
      offLoop?.abort();
      return done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
    }
    if (!offLoop) return inline(null, Buffer.concat(held, received));
    offLoop.end().then(
      (value) => done(null, value),
      (err: Error) => done(err),
    );
  };
  const onError = (err: Error) => {
    stop();
    offLoop?.abort();
    done(Object.assign(err, { statusCode: 400 }));
  };
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  payload.resume();
}

/** The body is over the limit: the rest of it is read and dropped (up to MAX_DISCARDED_BYTES), then the 413. */
function refuseWhenRead(payload: Readable, done: Done): void {
  let discarded = 0;
  const refuse = () => {
    payload.off('data', onData);
    payload.off('end', refuse);
    payload.off('error', refuse);
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DISCARDED_BYTES) refuse();
  };
  payload.on('data', onData);
  payload.on('end', refuse);
  payload.on('error', refuse);
  payload.resume();
}

/** application/json bodies (limit: the server's bodyLimit): inline when small, in the worker when large. */
export function registerJsonBodies(app: FastifyInstance, limit: number): void {
  const parseInline = app.getDefaultJsonParser('error', 'error');
  const json = new JsonWorker();
  app.addHook('onClose', () => json.close());
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const contentLength = Number(request.headers['content-length']);
    const inline: Done = (_err, body) => parseInline(request, (body as Buffer).toString('utf8'), done);
    readBody(payload, contentLength, limit, json, inline, done);
  });
}
