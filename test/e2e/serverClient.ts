/**
 * Test helpers for the server: boot it on port 0 over a TestEngine, and a realtime client that records every
 * server event and lets a test wait for the next one that matches.
 */
import { WebSocket, type ClientOptions } from 'ws';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';
import { TestEngine, type TestEngineOptions } from './serverTestEngine.ts';

export type ServerEvent = { type: string; [key: string]: unknown };

export async function startTestServer(opts: ServerOptions = {}, engineOpts: TestEngineOptions = {}) {
  const engine = new TestEngine(engineOpts);
  const app = buildServer(engine, { apiKey: null, ...opts });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('server has no address');
  const base = `http://127.0.0.1:${address.port}`;
  return { app, engine, base, wsUrl: `ws://127.0.0.1:${address.port}/v1/realtime` };
}

export class RealtimeClient {
  readonly ws: WebSocket;
  readonly events: ServerEvent[] = [];
  /** Arrival time (performance.now()) of each event, same index as events. */
  readonly arrivals: number[] = [];
  #cursor = 0;
  #waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      this.events.push(JSON.parse(data.toString()) as ServerEvent);
      this.arrivals.push(performance.now());
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      for (const w of this.#waiters.splice(0)) w();
      resolve({ code, reason: reason.toString() });
    }));
  }

  static async connect(url: string, protocols?: string | string[], options?: ClientOptions): Promise<RealtimeClient> {
    const ws = new WebSocket(url, protocols, options);
    const client = new RealtimeClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await client.next('session.created');
    return client;
  }

  send(event: object): void {
    this.ws.send(JSON.stringify(event));
  }

  /** The next event (after the previous next() result) matching type/predicate; fails after timeoutMs. */
  async next(type: string, predicate: (e: ServerEvent) => boolean = () => true, timeoutMs = 5000): Promise<ServerEvent> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      while (this.#cursor < this.events.length) {
        const e = this.events[this.#cursor++];
        if (e.type === type && predicate(e)) return e;
      }
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting for ${type}`);
      const remaining = deadline - performance.now();
      if (remaining <= 0) throw new Error(`timed out waiting for ${type}; got ${this.events.slice(-5).map((e) => e.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  ofType(type: string): ServerEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  /** Sends a user message and response.create; returns the response.done event. */
  async respond(text: string, response: object = {}, timeoutMs = 5000): Promise<ServerEvent> {
    this.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
    this.send({ type: 'response.create', response });
    return this.next('response.done', () => true, timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}

/** Concatenates the base64 pcm16 audio deltas of a response into samples. */
export function decodeAudioDeltas(events: readonly ServerEvent[], responseId?: string): Int16Array {
  const parts = events
    .filter((e) => e.type === 'response.output_audio.delta' && (responseId === undefined || e.response_id === responseId))
    .map((e) => Buffer.from(e.delta as string, 'base64'));
  const bytes = Buffer.concat(parts);
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}
